"""One decision per model message for batched tools (the computer's input actions).

A tool with `batch_summary` gets one decision for all its calls of one model message that share a
gated category: the summary lists them all, so an `ask` shows the batch in one prompt and the
reviewer judges it whole. The gate holds a `MessageBatches`, told of each message's calls before
any runs (`begin`), and asks it for the batch of each call (`batch_for`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mermaid_cli.core.types import ToolCallBlock

if TYPE_CHECKING:
    from mermaid_cli.policy.actions import PolicyOutcome


@dataclass
class Batch:
    """The shared decision of one model message's batched calls (decided by the first to ask)."""

    summary: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    outcome: PolicyOutcome | None = None


@dataclass
class MessageBatches:
    """The batches of the current model message, keyed by (tool name, category)."""

    _message_calls: tuple[ToolCallBlock, ...] = ()
    _batches: dict[tuple[str, str], Batch] = field(default_factory=dict)

    def begin(self, calls: Sequence[ToolCallBlock]) -> None:
        """The calls of one model message, before any runs."""
        self._message_calls = tuple(calls)
        self._batches = {}

    def batch_for(self, tool: Any, arguments: dict[str, Any], call: ToolCallBlock, hook: Any) -> Batch | None:
        """The batch `call` is decided with, or None when it is decided alone."""
        summarize = getattr(tool, "batch_summary", None)
        if summarize is None or (hook is not None and hook.decision is not None):
            return None  # a hook's opinion is about one call: that call is decided alone
        category = tool.category_for(arguments)
        if category == "read":
            return None
        if not any(c.id == call.id for c in self._message_calls):
            return Batch(summary=summarize([arguments]))  # not announced by begin_message: alone
        key = (call.name, category)
        batch = self._batches.get(key)
        if batch is None:
            members = [
                c.arguments
                for c in self._message_calls
                if c.name == call.name
                and c.arguments is not None
                and tool.category_for(c.arguments) == category
            ]
            batch = self._batches[key] = Batch(summary=summarize(members))
        return batch
