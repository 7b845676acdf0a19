"""`context_check`: how full the model's context window is right now, for a model deep in a tool
loop (the figures the run started with are stale by then). The loop supplies the figures
(`ToolContext.context_status`); this module words them."""

from __future__ import annotations

from dataclasses import dataclass

from mermaid_cli.core.types import ToolResult
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext


@dataclass(frozen=True)
class ContextStatus:
    """How full the context window is, and when compaction starts."""

    used_tokens: int  # the last model call's prompt and reply, or an estimate before the first
    window: int
    threshold_percent: int
    auto_compaction: bool
    tail_turns: int
    fixed_tokens: int  # system prompt and tool schemas (estimated): compaction cannot reclaim them
    compactions: int
    #: the provider compacts server-side (`[compaction] provider_native`), and how often it did
    server_compaction: bool = False
    server_compactions: int = 0


class ContextCheckArgs(ToolArgs):
    pass


def _pct(part: int, whole: int) -> str:
    return f"{part * 100 // whole}%" if whole > 0 else "?"


def describe(s: ContextStatus) -> str:
    lines = [f"Using {s.used_tokens} of {s.window} tokens ({_pct(s.used_tokens, s.window)})."]
    if s.auto_compaction and s.threshold_percent > 0 and s.server_compaction:
        at = s.window * s.threshold_percent // 100
        lines.append(
            f"Headroom: {max(0, at - s.used_tokens)} tokens before the provider compacts the context "
            f"server-side at {s.threshold_percent}% (provider-native compaction)."
        )
    elif s.auto_compaction and s.threshold_percent > 0:
        at = s.window * s.threshold_percent // 100
        lines.append(
            f"Headroom: {max(0, at - s.used_tokens)} tokens before auto-compaction fires at {s.threshold_percent}%."
        )
    else:
        lines.append(f"Headroom: {max(0, s.window - s.used_tokens)} tokens; auto-compaction is off.")
    lines.append(
        f"Kept verbatim on compaction: the last {s.tail_turns} turn(s); everything older is replaced by a summary."
    )
    lines.append(
        f"Fixed overhead: about {s.fixed_tokens} tokens of system prompt and tool schemas (estimated). "
        "Compaction does not reclaim this."
    )
    conversation = max(0, s.used_tokens - s.fixed_tokens)
    lines.append(f"Conversation: about {conversation} tokens, which is the part compaction acts on.")
    if s.server_compactions:
        lines.append(
            f"Compactions so far: {s.compactions}, {s.server_compactions} of them by the provider "
            "server-side; context_archive reads every message from before them."
        )
    elif s.compactions:
        lines.append(f"Compactions so far: {s.compactions}; context_archive reads what they summarized away.")
    else:
        lines.append("Compactions so far: none, so nothing has been summarized away yet.")
    return "\n".join(lines)


class ContextCheck(Tool):
    name = "context_check"
    description = (
        "How full the context window is now: tokens used, headroom before auto-compaction, overhead."
    )
    Args = ContextCheckArgs
    category = "session"

    async def run(self, args: ContextCheckArgs, ctx: ToolContext) -> ToolResult:
        if ctx.context_status is None:
            return ToolResult.error("context_check is unavailable: this run has no context figures")
        status = ctx.context_status()
        if ctx.archive is not None:  # a resumed session's earlier compactions count too
            earlier = {m.compacted_by for m in ctx.archive() if m.compacted_by is not None}
            if len(earlier) > status.compactions:
                status = ContextStatus(**{**status.__dict__, "compactions": len(earlier)})
        return ToolResult(
            content=describe(status),
            summary=f"{status.used_tokens} of {status.window} tokens ({_pct(status.used_tokens, status.window)})",
        )
