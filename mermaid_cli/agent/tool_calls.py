"""One tool call, end to end: `tool_started`, bind the arguments, the policy gate, the tool, the
hook's context, `approval_decided`, and `tool_finished` with the redacted, capped output. A tool
that raises becomes an error result; only cancellation propagates."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from mermaid_cli.agent.background import BackgroundCalls
from mermaid_cli.agent.state import Gate, RunStats
from mermaid_cli.core import events as ev
from mermaid_cli.core.text import cap_text
from mermaid_cli.core.types import Decision, ToolCallBlock, ToolResult, ToolResultBlock
from mermaid_cli.security.redact import redact_obj
from mermaid_cli.tools import call_options
from mermaid_cli.tools.agent import current_call_id
from mermaid_cli.tools.base import Tool, ToolContext, ToolRegistry

EVENT_OUTPUT_CHARS = 8 * 1024
EVENT_ARG_CHARS = 2000


def _cap(text: str, limit: int) -> str:
    return cap_text(text, limit, head_share=0.5)


def _cap_args(value: Any) -> Any:
    if isinstance(value, str):
        return _cap(value, EVENT_ARG_CHARS)
    if isinstance(value, dict):
        return {k: _cap_args(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cap_args(v) for v in value]
    return value


class ToolCalls:
    """Runs the model's tool calls for one agent; numbers them `tool#N` across the run."""

    def __init__(
        self,
        *,
        registry: ToolRegistry,
        ctx: ToolContext,
        gate: Gate,
        stats: RunStats,
        emit: Callable[[ev._Event], None],
        redact: Callable[[str], str],
        monotonic: Callable[[], float],
    ) -> None:
        self.registry = registry
        self.ctx = ctx
        self.gate = gate
        self.stats = stats
        self.emit = emit
        self.redact = redact
        self.monotonic = monotonic
        self.seq = 0
        #: awaited before the first tool runs (the workspace snapshot may still be being taken)
        self.tools_ready: Awaitable[Any] | None = None
        #: a tool's compaction request, for the loop to honour before its next model call
        self.compaction_focus: str | None = None
        #: calls made with `background: true`, for the loop to deliver and wait for
        self.background = BackgroundCalls(emit)
        ctx.cleanups.append(self.background.cancel_all)

    async def run(self, call: ToolCallBlock) -> ToolResultBlock:
        self.seq += 1
        call_id = f"tool#{self.seq}"
        current_call_id.set(call_id)  # the `agent` tool names its child's parent call
        self.stats.tool_calls += 1
        args_view = self.redact_obj(_cap_args(call.arguments)) if call.arguments is not None else None
        self.emit(
            ev.ToolStarted(call_id=call_id, name=call.name, arguments=args_view, targets=self._targets(call))
        )
        started = self.monotonic()
        decision: Decision | None = None
        try:
            tool = self.registry.get(call.name)
            if tool is not None and tool.starts_process and self.ctx.sandbox is not None:
                self.ctx.sandbox.expect_child()  # before the gate: it takes the longest here
            # `scratchpad` / `background` are the loop's, taken out before the tool sees the call
            split = call_options.split(tool, call)
            options, call = split if not isinstance(split, ToolResult) else (call_options.CallOptions(), call)
            bound = split if isinstance(split, ToolResult) else self.registry.bind(call)
            if isinstance(bound, ToolResult):
                result = bound
            else:
                tool, args = bound
                gate = await self.gate.check(call_id, tool, args, call)
                decision = gate.decision
                if gate.decision.verdict == "allow":
                    allowed = gate.args if gate.args is not None else args
                    if options.background:
                        result = self._detach(call, call_id, tool, allowed, options, gate.context, decision)
                    else:
                        result = await self._run_allowed(tool, allowed, options, gate.context)
                else:
                    message = gate.message or f"{call.name} was not run: {gate.decision.reason or 'denied'}"
                    result = ToolResult.error(message)
                    if gate.blocked:
                        self.stats.blocked.append(
                            {
                                "call_id": call_id,
                                "tool": call.name,
                                "reason": gate.decision.reason or "approval required",
                            }
                        )
                if gate.decision.by != "mode" or gate.decision.verdict != "allow":
                    self.emit(
                        ev.ApprovalDecided(
                            call_id=call_id,
                            tool=call.name,
                            verdict="allow" if gate.decision.verdict == "allow" else "deny",
                            by=gate.decision.by,
                            reason=gate.decision.reason,
                        )
                    )
        except asyncio.CancelledError:
            self.emit(
                ev.ToolFinished(
                    call_id=call_id,
                    name=call.name,
                    status="cancelled",
                    summary="cancelled",
                    duration_ms=int((self.monotonic() - started) * 1000),
                )
            )
            raise
        return self._finish(call, call_id, result, decision, started)

    async def _run_allowed(
        self, tool: Tool, args: Any, options: call_options.CallOptions, context: str | None
    ) -> ToolResult:
        result = await options.execute(lambda: self._execute(tool, args), self.ctx.scratchpad)
        if context:
            result = result.model_copy(update={"content": f"{result.content}\n\n[hook] {context}"})
        return result

    def _detach(
        self,
        call: ToolCallBlock,
        call_id: str,
        tool: Tool,
        args: Any,
        options: call_options.CallOptions,
        context: str | None,
        decision: Decision | None,
    ) -> ToolResult:
        async def work(bg_id: str) -> ToolResultBlock:
            started = self.monotonic()
            result = await self._run_allowed(tool, args, options, context)
            return self._finish(call, bg_id, result, decision, started)

        return self.background.start(call, call_id, work)

    def _targets(self, call: ToolCallBlock) -> list[ev.FileTargetInfo] | None:
        """What the gate will judge for a file tool's call: its resolved files and operations."""
        tool = self.registry.get(call.name)
        if tool is None or not isinstance(call.arguments, dict) or not hasattr(tool, "file_targets"):
            return None
        try:
            found = self.gate.targets_for(tool, call.arguments)
        except Exception:  # noqa: BLE001 - a report; the gate itself refuses bad paths
            return None
        return [ev.FileTargetInfo.model_validate(t) for t in self.redact_obj(found)] or None

    async def _execute(self, tool: Tool, args: Any) -> ToolResult:
        if self.tools_ready is not None:
            await self.tools_ready
        if getattr(tool, "category", None) == "mcp":
            self.stats.untrusted_content = True  # a third-party server's text now steers the model
        try:
            return await tool.run(args, self.ctx)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a tool that raises becomes an error result the model sees
            return ToolResult.error(f"{tool.name} failed: {type(exc).__name__}: {exc}")

    def _finish(
        self, call: ToolCallBlock, call_id: str, result: ToolResult, decision: Decision | None, started: float
    ) -> ToolResultBlock:
        if result.compaction_focus is not None:
            self.compaction_focus = result.compaction_focus
        meta = result.metadata
        for path in meta.get("files_changed", ()) or ():
            if path not in self.stats.files_changed:
                self.stats.files_changed.append(path)
        if meta.get("untrusted_content"):
            self.stats.untrusted_content = True
        error_text = None
        if result.is_error:
            self.stats.tool_errors += 1
            first_line = result.content.splitlines()[0] if result.content else ""
            error_text = self.redact(result.summary or first_line or "error")
            self.stats.errors.append(f"{call.name}: {error_text}")
        summary = result.summary or (result.content.splitlines()[0] if result.content else "")
        self.emit(
            ev.ToolFinished(
                call_id=call_id,
                name=call.name,
                status="error" if result.is_error else "success",
                summary=self.redact(summary[:300]),
                error=error_text,
                web=meta.get("web"),
                fuzzy=bool(meta.get("fuzzy")),
                duration_ms=int((self.monotonic() - started) * 1000),
                output=self.redact(_cap(result.content, EVENT_OUTPUT_CHARS)),
                exit_code=meta.get("exit_code"),
                decision=ev.DecisionInfo(verdict=decision.verdict, by=decision.by, reason=decision.reason)
                if decision is not None
                else None,
            )
        )
        return ToolResultBlock(
            call_id=call.id, content=result.content, is_error=result.is_error, images=result.images
        )

    def redact_obj(self, value: Any) -> Any:
        return redact_obj(value, self.redact)
