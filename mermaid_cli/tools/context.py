"""context_archive and compact_context: the model's view of its own history.

`context_archive` reads the session log through a reader the session store provides in
`ctx.archive`: a callable returning every message of the run as `ArchivedMessage`s,
numbered in the order they happened and marked with the compaction that removed them from the
working context. So a checkpoint summary is never the only copy of anything.

`compact_context` only returns the request (`ToolResult.compaction_focus`); the loop compacts
before its next model call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import Field

from mermaid_cli.core.types import ToolResult
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext

PAGE_CHARS = 32_000
_PREVIEW = 100
_SNIPPET = 120
_MAX_SNIPPETS_PER_MESSAGE = 3


@dataclass(frozen=True)
class ArchivedMessage:
    """A message of the run as the context tool lists it."""

    index: int
    role: str
    text: str
    #: number of the compaction that removed it from the working context; None while it is in it
    compacted_by: int | None = None


ArchiveReader = Callable[[], list[ArchivedMessage]]


def _label(m: ArchivedMessage) -> str:
    where = f", removed by compaction {m.compacted_by}" if m.compacted_by is not None else ""
    return f"#{m.index} {m.role}{where}"


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _page(text: str, offset: int, again: str) -> str:
    """`text` from `offset`, at most PAGE_CHARS, with how to read on when there is more."""
    if offset >= len(text) and text:
        return f"[char_offset {offset} is past the end ({len(text)} characters)]"
    chunk = text[offset : offset + PAGE_CHARS]
    end = offset + len(chunk)
    if offset == 0 and end >= len(text):
        return chunk
    note = f"[characters {offset}-{end} of {len(text)}"
    note += f"; read on with {again}, char_offset={end}]" if end < len(text) else "]"
    return f"{note}\n{chunk}"


def _snippets(text: str, needle: str) -> list[str]:
    low = text.lower()
    out: list[str] = []
    start = 0
    while len(out) < _MAX_SNIPPETS_PER_MESSAGE:
        at = low.find(needle, start)
        if at < 0:
            break
        lo, hi = max(0, at - _SNIPPET), min(len(text), at + len(needle) + _SNIPPET)
        snippet = " ".join(text[lo:hi].split())
        out.append(("…" if lo > 0 else "") + snippet + ("…" if hi < len(text) else ""))
        start = hi
    return out


class ContextArchiveArgs(ToolArgs):
    query: str | None = Field(default=None, description="Text to search for in the whole log (any case).")
    message: int | None = Field(default=None, ge=0, description="Number of a message to read whole.")
    char_offset: int = Field(default=0, ge=0, description="Where to continue reading a long result.")


class ContextArchive(Tool):
    name = "context_archive"
    description = (
        "The full log of this run, including messages compaction summarised away: search it with query, "
        "read one message whole with message (its #number), or list it with neither. Long results are "
        "paged with char_offset."
    )
    Args = ContextArchiveArgs
    category = "session"

    async def run(self, args: ContextArchiveArgs, ctx: ToolContext) -> ToolResult:
        reader = ctx.archive
        if reader is None:
            return ToolResult.error("the session archive is not available in this run.")
        if args.query is not None and args.message is not None:
            return ToolResult.error("give either query or message, not both.")
        archive: list[ArchivedMessage] = reader()
        if args.message is not None:
            return self._read(archive, args.message, args.char_offset)
        if args.query is not None and args.query.strip():
            return self._search(archive, args.query.strip(), args.char_offset)
        return self._list(archive, args.char_offset)

    def _read(self, archive: list[ArchivedMessage], number: int, offset: int) -> ToolResult:
        found = next((m for m in archive if m.index == number), None)
        if found is None:
            last = archive[-1].index if archive else None
            span = f"messages are #0-#{last}" if last is not None else "the log is empty"
            return ToolResult.error(f"no message #{number}; {span}.")
        body = _page(found.text, offset, f"message={number}")
        return ToolResult(
            content=f"{_label(found)} ({len(found.text)} characters):\n{body}",
            summary=f"Read message #{number}",
        )

    def _search(self, archive: list[ArchivedMessage], query: str, offset: int) -> ToolResult:
        needle = query.lower()
        hits = [m for m in archive if needle in m.text.lower()]
        how = "phrase"
        words = needle.split()
        if not hits and len(words) > 1:
            # The exact phrase may be split by formatting; every word in one message still helps.
            hits = [m for m in archive if all(w in m.text.lower() for w in words)]
            how = "all words"
        if not hits:
            return ToolResult(content=f"No message contains {query!r}.", summary="0 matches")
        blocks = []
        for m in hits:
            shown = _snippets(m.text, needle if how == "phrase" else words[0])
            blocks.append(f"{_label(m)}:\n" + "\n".join(f"  {s}" for s in shown))
        head = f"{len(hits)} message(s) contain {query!r}" + (" (all words)" if how == "all words" else "")
        text = head + "; read one whole with message=<number>.\n\n" + "\n".join(blocks)
        return ToolResult(content=_page(text, offset, f"query={query!r}"), summary=f"{len(hits)} match(es)")

    def _list(self, archive: list[ArchivedMessage], offset: int) -> ToolResult:
        if not archive:
            return ToolResult(content="The log is empty.", summary="0 messages")
        lines = [f"{_label(m)} ({len(m.text)} chars): {_one_line(m.text, _PREVIEW)}" for m in archive]
        text = f"{len(archive)} message(s):\n" + "\n".join(lines)
        return ToolResult(
            content=_page(text, offset, "no query or message"), summary=f"{len(archive)} messages"
        )


class CompactContextArgs(ToolArgs):
    focus: str | None = Field(
        default=None, max_length=2000, description="What the summary must keep in detail."
    )


class CompactContext(Tool):
    name = "compact_context"
    description = (
        "Summarise older history into a checkpoint before your next step, when your context is long or "
        "noisy. Nothing is lost: context_archive still reads every message."
    )
    Args = CompactContextArgs
    category = "session"

    async def run(self, args: CompactContextArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(
            content="Compaction requested; it runs before your next model call.",
            summary="Compaction requested",
            compaction_focus=(args.focus or "").strip(),
        )
