"""The loop's value types: the gate it calls (`Gate`, with `AllowAllGate` for tests), its limits
and compaction policy, the run's running totals (`RunStats`), and history repair for --resume."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from mermaid_cli.core.types import Decision, GateResult, Message, ToolCallBlock, ToolResultBlock, Usage
from mermaid_cli.tools.base import Tool


class Gate(Protocol):
    async def check(self, call_id: str, tool: Tool, args: Any, call: ToolCallBlock) -> GateResult: ...

    def targets_for(self, tool: Tool, arguments: dict[str, Any]) -> list[dict[str, str]]:
        """The resolved files a call touches (for `tool_started.targets`); [] when none."""
        ...


class AllowAllGate:
    """Lets every call through; the policy gate replaces it."""

    async def check(self, call_id: str, tool: Tool, args: Any, call: ToolCallBlock) -> GateResult:
        return GateResult(decision=Decision(verdict="allow", by="mode"))

    def targets_for(self, tool: Tool, arguments: dict[str, Any]) -> list[dict[str, str]]:
        return []


@dataclass
class CompactionPolicy:
    """When and how the loop compacts the conversation (`[compaction]`)."""

    auto_enabled: bool = True
    threshold_percent: int = 85
    tail_turns: int = 2
    max_recoveries: int = 3
    window: int = 200_000
    #: the provider compacts server-side at the threshold (`[compaction] provider_native` and a
    #: model that supports it); the loop's own token-threshold compaction then stays off
    provider_native: bool = False

    @property
    def threshold_tokens(self) -> int:
        return self.window * self.threshold_percent // 100


@dataclass
class Limits:
    """The run's caps: model calls, tokens and dollars (None: no cap)."""

    max_turns: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None


@dataclass
class RunStats:
    """What a run has used and produced so far; the `result` line reports it."""

    num_turns: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = 0.0
    tool_calls: int = 0
    tool_errors: int = 0
    errors: list[str] = field(default_factory=list)
    blocked: list[dict[str, Any]] = field(default_factory=list)
    files_changed: list[str] = field(default_factory=list)
    response: str = ""
    reasoning: str | None = None
    finished: bool = False  # the model ended its turn without asking for tools
    untrusted_content: bool = False


def repair_history(messages: list[Message]) -> list[Message]:
    """Give every tool call a result, so a session saved mid-tool-call resumes cleanly."""
    out: list[Message] = []
    for i, msg in enumerate(messages):
        out.append(msg)
        calls = msg.tool_calls if msg.role == "assistant" else []
        if not calls:
            continue
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        answered = (
            {b.call_id for b in nxt.content if isinstance(b, ToolResultBlock)}
            if nxt and nxt.role == "user"
            else set()
        )
        missing = [c for c in calls if c.id not in answered]
        if not missing:
            continue
        fill = tuple(
            ToolResultBlock(call_id=c.id, content="the run ended before this call finished", is_error=True)
            for c in missing
        )
        if nxt is not None and nxt.role == "user" and answered:
            messages[i + 1] = Message(role="user", content=fill + nxt.content)
        else:
            out.append(Message(role="user", content=fill))
    return out
