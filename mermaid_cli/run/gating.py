"""The run's policy gate (DESIGN.md §4) and its reviewer: the run's model, or the one
`[safety] auto_classifier_model` names, with its calls recorded into --record so a replay answers
them in order."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mermaid_cli.core import events as ev
from mermaid_cli.core.types import ModelTurn, TurnRequest, Usage
from mermaid_cli.run.options import RunIO
from mermaid_cli.run.output import Output
from mermaid_cli.run.setup import Draft

if TYPE_CHECKING:
    from mermaid_cli.config.loader import Settings
    from mermaid_cli.core.protocols import TurnSink
    from mermaid_cli.policy.gate import PolicyGate
    from mermaid_cli.providers.base import Provider


class RecordingReviewer:
    """The reviewer's model calls go into --record too, so a replay answers them in order."""

    def __init__(self, provider: Provider, on_turn: Callable[[], Callable[[ModelTurn], None] | None]) -> None:
        self._provider = provider
        self._on_turn = on_turn  # read at call time: the recorder exists once the agent does
        self.model_id = getattr(provider, "model_id", "")

    async def turn(self, request: TurnRequest, sink: TurnSink) -> ModelTurn:
        turn = await self._provider.turn(request, sink)
        record = self._on_turn()
        if record is not None:
            record(turn)
        return turn

    async def aclose(self) -> None:
        pass  # the provider it wraps is closed by whoever opened it


def policy_gate(
    settings: Settings,
    *,
    project_root: Path,
    reviewer: RecordingReviewer,
    emit: Callable[[ev._Event], None],
    note: Callable[[str], None],
    redact: Callable[[str], str],
    interactive: bool,
    user_request: Callable[[], str],
    untrusted_content: Callable[[], bool],
    on_usage: Callable[[Usage], None],
    approver: Callable[[str, str, str], Any] | None = None,  # the terminal view's; else the plain one
) -> PolicyGate:
    """The gate every tool call of the run passes (DESIGN.md §4)."""
    from mermaid_cli.policy.approvers import tty_approver
    from mermaid_cli.policy.gate import PolicyGate

    return PolicyGate(
        settings=settings,
        project_root=project_root,
        emit=emit,
        interactive=interactive,
        allow_untrusted=settings.safety.allow_untrusted_headless_tools,
        reviewer=reviewer,
        user_request=user_request,
        hooks=list(settings.hooks.before_tool_use),
        redact=redact,
        approver=(approver or tty_approver) if interactive else None,
        untrusted_content=untrusted_content,
        on_usage=on_usage,
        note=note,
    )


def run_gate(
    settings: Settings,
    io: RunIO,
    draft: Draft,
    out: Output,
    provider: Provider,
    *,
    interactive: bool,
    prompt: str,
) -> PolicyGate:
    """The policy gate; its reviewer is the run's model unless [safety] auto_classifier_model
    names another. The agent's callbacks are read at call time (the agent is built after it)."""
    reviewer = provider
    if settings.safety.auto_classifier_model:
        from mermaid_cli.providers.resolve import create_provider

        reviewer = create_provider(settings.safety.auto_classifier_model, settings, io.env)
        draft.cleanups.append(reviewer.aclose)

    def on_usage(usage: Usage) -> None:
        if draft.agent is not None:
            draft.agent.account(usage)

    return policy_gate(
        settings,
        project_root=draft.project_root,
        reviewer=RecordingReviewer(reviewer, lambda: draft.agent.on_turn if draft.agent else None),
        emit=out.emit,
        note=out.note,
        redact=draft.redact,
        interactive=interactive,
        user_request=lambda: prompt,
        untrusted_content=lambda: bool(draft.agent and draft.agent.stats.untrusted_content),
        on_usage=on_usage,
        approver=out.approver,
    )
