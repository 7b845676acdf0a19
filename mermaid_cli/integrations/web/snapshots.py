"""Per-run store of fetched pages (`web-1`, `web-2`, ...) with caseless search and line paging.

Line numbers are stable for the life of a snapshot: very long lines (minified sources) are
wrapped once when the snapshot is made, so paging always makes progress.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

WRAP_AT = 2_000
MAX_BLOCKS = 20


@dataclass(frozen=True)
class Snapshot:
    """A fetched page kept for later reads and searches."""

    id: str
    url: str
    media_type: str
    extraction: str
    source_byte_count: int
    lines: tuple[str, ...]

    @property
    def text_bytes(self) -> int:
        return sum(len(line.encode("utf-8")) + 1 for line in self.lines)


@dataclass
class SnapshotStore:
    """Keeps the newest snapshots within `max_bytes`; older ones expire (their ids stay unique)."""

    max_bytes: int = 32 * 1024 * 1024
    _next: int = 1
    _items: dict[str, Snapshot] = field(default_factory=dict)
    _expired: set[str] = field(default_factory=set)

    def add(
        self, *, url: str, media_type: str, extraction: str, source_byte_count: int, text: str
    ) -> Snapshot:
        snap = Snapshot(
            id=f"web-{self._next}",
            url=url,
            media_type=media_type,
            extraction=extraction,
            source_byte_count=source_byte_count,
            lines=tuple(split_lines(text)),
        )
        self._next += 1
        self._items[snap.id] = snap
        self._evict()
        return snap

    def get(self, snapshot_id: str) -> Snapshot | None:
        return self._items.get(snapshot_id)

    def is_expired(self, snapshot_id: str) -> bool:
        return snapshot_id in self._expired

    def _evict(self) -> None:
        total = sum(s.text_bytes for s in self._items.values())
        while total > self.max_bytes and len(self._items) > 1:
            oldest = next(iter(self._items))
            total -= self._items.pop(oldest).text_bytes
            self._expired.add(oldest)


def split_lines(text: str) -> list[str]:
    lines: list[str] = []
    for line in text.splitlines() or [""]:
        line = line.rstrip()
        while len(line) > WRAP_AT:
            lines.append(line[:WRAP_AT])
            line = line[WRAP_AT:]
        lines.append(line)
    return lines


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


@dataclass(frozen=True)
class SearchResult:
    """The lines of a snapshot that matched a search."""

    text: str  # the rendered match blocks
    match_count: int  # matching lines
    block_count: int
    shown_blocks: int
    more_matches: int  # matching lines in blocks not shown


def search(
    lines: tuple[str, ...] | list[str], pattern: str, context_lines: int = 2, max_blocks: int = MAX_BLOCKS
) -> SearchResult:
    """Lines containing `pattern` (Unicode-caseless, literal), merged with `context_lines` of
    context into blocks. Matching lines are marked `>`, context lines `:`."""
    needle = _fold(pattern)
    hits = [i for i, line in enumerate(lines) if needle in _fold(line)]
    blocks: list[tuple[int, int, list[int]]] = []
    for i in hits:
        start, end = max(0, i - context_lines), min(len(lines) - 1, i + context_lines)
        if blocks and start <= blocks[-1][1] + 1:
            blocks[-1] = (blocks[-1][0], max(end, blocks[-1][1]), blocks[-1][2] + [i])
        else:
            blocks.append((start, end, [i]))
    shown = blocks[:max_blocks]
    width = len(str(len(lines)))
    out: list[str] = []
    for start, end, block_hits in shown:
        out.append(f"--- lines {start + 1}-{end + 1}")
        marks = set(block_hits)
        for n in range(start, end + 1):
            out.append(f"{n + 1:>{width}}{'>' if n in marks else ':'} {lines[n]}")
    more = sum(len(b[2]) for b in blocks[max_blocks:])
    if more:
        out.append(f"(+{more} more matches in {len(blocks) - max_blocks} more blocks)")
    return SearchResult(
        text="\n".join(out),
        match_count=len(hits),
        block_count=len(blocks),
        shown_blocks=len(shown),
        more_matches=more,
    )


@dataclass(frozen=True)
class Page:
    """A range of a snapshot's lines."""

    text: str
    first: int  # 1-based, inclusive
    last: int  # 1-based, inclusive; first - 1 when empty
    total: int

    @property
    def complete(self) -> bool:
        return self.last >= self.total


def page(lines: tuple[str, ...] | list[str], start_line: int, line_count: int | None, max_bytes: int) -> Page:
    """Lines from `start_line` (1-based): at most `line_count`, and at most `max_bytes` of text
    (always at least one line, cut if it alone is too long)."""
    total = len(lines)
    first = max(1, start_line)
    out: list[str] = []
    used = 0
    n = first - 1
    limit = total if line_count is None else min(total, first - 1 + line_count)
    while n < limit:
        size = len(lines[n].encode("utf-8")) + 1
        if out and used + size > max_bytes:
            break
        line = lines[n]
        if size > max_bytes:
            line = line.encode("utf-8")[: max(0, max_bytes - 1)].decode("utf-8", "ignore")
        out.append(line)
        used += size
        n += 1
    return Page(text="\n".join(out), first=first, last=n, total=total)
