"""The parts of a run that sit on the others: the resolved model (its secrets join the
redactor, the heartbeat wraps its client), an MCP prompt as the task, the --record recorder, the
loop itself, and closing all of it however the run ended. `run.assemble` calls these in order.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import TYPE_CHECKING

from mermaid_cli.core.errors import UsageError
from mermaid_cli.core.types import ModelTurn, TurnRequest
from mermaid_cli.providers.base import TurnSink
from mermaid_cli.run.options import ExecOptions, RunIO, wait_for_piped
from mermaid_cli.run.output import Output
from mermaid_cli.run.setup import Draft, History

if TYPE_CHECKING:
    from mermaid_cli.agent.loop import Agent
    from mermaid_cli.agent.state import Gate
    from mermaid_cli.config.loader import Settings
    from mermaid_cli.integrations.mcp.manager import McpManager
    from mermaid_cli.providers.base import Provider
    from mermaid_cli.providers.resolve import ResolvedModel
    from mermaid_cli.store.recordings import Recorder
    from mermaid_cli.store.sessions import SessionWriter
    from mermaid_cli.tools.base import ToolContext, ToolRegistry


class BorrowedProvider:
    """A parent's provider lent to a subagent on the same model: one HTTP client (and TLS
    context) for the tree. The child's close leaves it open; the parent closes it."""

    def __init__(self, provider: Provider) -> None:
        self._provider = provider
        self.model_id = provider.model_id

    def __getattr__(self, name: str) -> object:
        return getattr(self._provider, name)

    async def turn(self, request: TurnRequest, sink: TurnSink) -> ModelTurn:
        return await self._provider.turn(request, sink)

    async def aclose(self) -> None:
        pass


def resolve_run_model(
    opts: ExecOptions,
    io: RunIO,
    out: Output,
    draft: Draft,
    settings: Settings,
    deadline: float,
    shared: ResolvedModel | None = None,
) -> tuple[ResolvedModel, Provider]:
    """The resolved model; its secrets join the redactor before anything could print them.
    `shared`: the parent's, reused when a subagent runs on the same model."""
    from mermaid_cli.providers.resolve import resolve_model
    from mermaid_cli.security.childenv import withhold

    assert draft.redactor is not None
    if shared is not None and settings.model == shared.model_id:
        resolved = dataclasses.replace(shared, provider=BorrowedProvider(shared.provider), warnings=())
    else:
        resolved = resolve_model(
            None,
            settings,
            io.env,
            cwd=io.cwd,
            # the provider retries on the wall clock; the run's deadline is on the injected one
            deadline=lambda: time.monotonic() + deadline - io.monotonic(),
        )
    draft.model_id = resolved.model_id
    for secret in resolved.secrets:
        draft.redactor.add(secret)
    withhold(resolved.secrets)  # whatever the variable it came from is called
    for warning in resolved.warnings:
        out.note(warning)
    provider: Provider = resolved.provider
    if not opts.quiet:
        from mermaid_cli.run.heartbeat import HeartbeatProvider, interval_from

        provider = HeartbeatProvider(provider, out.heartbeat, interval=interval_from(io.env))
    if settings.run.max_cost is not None and resolved.price is None:
        raise UsageError(
            f"--max-cost needs a price for {draft.model_id}, and none is known; set [pricing] for it"
        )
    return resolved, provider


async def mcp_prompt(opts: ExecOptions, io: RunIO, mcp: McpManager | None) -> str:
    from mermaid_cli.integrations.mcp.prompts import fetch_prompt

    if mcp is None:
        raise UsageError("--mcp-prompt: no MCP servers are configured")
    text = await fetch_prompt(mcp, opts.mcp_prompt or "", list(opts.prompt_args))
    piped = await wait_for_piped(io)
    return f"{text}\n\n```\n{piped}\n```" if piped else text


def open_recorder(opts: ExecOptions, io: RunIO, draft: Draft, model: ResolvedModel) -> Recorder | None:
    """--record FILE: every model turn, for a later `replay/FILE` run."""
    if not opts.record:
        return None
    from mermaid_cli.store.recordings import Recorder

    recorder = Recorder(
        io.cwd / opts.record,
        model.recorded_model or draft.model_id,
        io.clock().isoformat(),
        redact=draft.redact,
    )
    draft.cleanups.append(recorder.close)
    return recorder


def build_agent(
    settings: Settings,
    io: RunIO,
    out: Output,
    draft: Draft,
    *,
    provider: Provider,
    registry: ToolRegistry,
    ctx: ToolContext,
    gate: Gate,
    system: str,
    history: History,
    writer: SessionWriter,
    recorder: Recorder | None,
    model: ResolvedModel,
    parent: Agent | None = None,
) -> Agent:
    """The loop, with the run's limits, compaction policy and session log."""
    from mermaid_cli.agent.loop import Agent
    from mermaid_cli.agent.state import CompactionPolicy, Limits

    comp, run = settings.compaction, settings.run
    # provider-native compaction where the provider and model offer it; ours otherwise (said once)
    server_side = comp.provider_native and bool(getattr(provider, "native_compaction", False))
    if comp.provider_native and not server_side and parent is None:
        out.note(
            f"[compaction] provider_native: {model.model_id} has no server-side compaction; "
            "Mermaid compacts the context itself"
        )
    return Agent(
        provider=provider,
        registry=registry,
        ctx=ctx,
        emit=out.emit,
        system_prompt=system,
        history=history.messages,
        limits=Limits(run.max_turns, run.max_tokens, run.max_cost),
        price=model.cost if model.price is not None else None,
        on_turn=recorder.record if recorder else None,
        on_message=writer.append_message,
        on_compaction=writer.append_compaction,
        history_ids=history.ids,
        compaction=CompactionPolicy(
            auto_enabled=comp.auto_enabled,
            threshold_percent=comp.auto_threshold_percent,
            tail_turns=comp.tail_turns,
            max_recoveries=comp.max_truncation_recoveries,
            window=comp.context_window or model.context_window,
            provider_native=server_side,
        ),
        note=out.note,
        redact=draft.redact,
        reasoning=settings.reasoning,
        max_output_tokens=run.max_output_tokens,
        monotonic=io.monotonic,
        gate=gate,
        parent=parent,
    )


async def close_draft(draft: Draft) -> None:
    """Close what assembly opened, newest first, however the run ended: the loop's tool cleanups
    and provider, the cleanups, then the sandbox (after them: background processes are gone)."""
    agent = draft.agent
    if agent is not None:
        await agent.aclose()
        try:
            await agent.provider.aclose()
        except Exception:  # noqa: BLE001 - closing must not mask the run's outcome
            pass
    for cleanup in reversed(draft.cleanups):
        try:
            outcome = cleanup()
            if asyncio.iscoroutine(outcome):
                await outcome
        except Exception:  # noqa: BLE001
            pass
    if draft.sandbox is not None:
        draft.sandbox.close()
