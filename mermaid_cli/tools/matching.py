"""The match ladder edit_file and apply_patch share: exact, then per line ignoring trailing
whitespace, then ignoring all surrounding whitespace, then after Unicode normalisation (NFKC plus
typographic quotes and dashes folded to ASCII). The first level that finds anything wins; every
level after the first is "fuzzy" and the caller says so.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

EXACT = "exact"
TRAILING = "trailing_whitespace"
TRIM = "trim"
UNICODE = "unicode"
LEVELS = (EXACT, TRAILING, TRIM, UNICODE)

_FOLD = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u00a0": " ",
        "\u2026": "...",
    }
)


def _unicode(line: str) -> str:
    if line.isascii():
        return line.strip()
    return unicodedata.normalize("NFKC", line).translate(_FOLD).strip()


NORMALISERS: dict[str, Callable[[str], str]] = {
    EXACT: lambda s: s,
    TRAILING: str.rstrip,
    TRIM: str.strip,
    UNICODE: _unicode,
}

# Enough to say "N matches"; more is never useful and costs time on huge files.
MAX_SPANS = 1000


@dataclass(frozen=True)
class TextMatch:
    """Where a search text matched, and how loosely."""

    level: str
    #: (start, end) character offsets into the content, non-overlapping, in order
    spans: list[tuple[int, int]]

    @property
    def fuzzy(self) -> bool:
        return self.level != EXACT


def find_text(content: str, target: str) -> TextMatch:
    """Where `target` occurs in `content`, by the first ladder level that finds it."""
    spans = _exact_spans(content, target)
    if spans or not target.strip():
        return TextMatch(EXACT, spans)
    index = LineIndex(content.split("\n"))
    starts = index.starts()
    want = target.split("\n")
    keep_newline = False
    if len(want) > 1 and want[-1] == "":
        want.pop()
        keep_newline = True
    for level in LEVELS[1:]:
        found = index.find_all(want, level)
        if found:
            out = []
            for i in found:
                j = i + len(want) - 1
                end = starts[j] + len(index.lines[j])
                if keep_newline and j + 1 < len(index.lines):
                    end += 1
                out.append((starts[i], end))
            return TextMatch(level, out)
    return TextMatch(EXACT, [])


def _exact_spans(content: str, target: str) -> list[tuple[int, int]]:
    if not target:
        return []
    spans: list[tuple[int, int]] = []
    pos = content.find(target)
    while pos >= 0 and len(spans) < MAX_SPANS:
        spans.append((pos, pos + len(target)))
        pos = content.find(target, pos + len(target))
    return spans


def replace_spans(content: str, spans: list[tuple[int, int]], replacement: str) -> str:
    parts = []
    last = 0
    for start, end in spans:
        parts.append(content[last:start])
        parts.append(replacement)
        last = end
    parts.append(content[last:])
    return "".join(parts)


class LineIndex:
    """Lines of one file with their normalised forms computed lazily, once per level."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self._norm: dict[str, list[str]] = {EXACT: lines}
        self._starts: list[int] | None = None

    def norm(self, level: str) -> list[str]:
        got = self._norm.get(level)
        if got is None:
            fn = NORMALISERS[level]
            got = self._norm[level] = [fn(line) for line in self.lines]
        return got

    def starts(self) -> list[int]:
        if self._starts is None:
            pos = 0
            out = []
            for line in self.lines:
                out.append(pos)
                pos += len(line) + 1
            self._starts = out
        return self._starts

    def find_all(
        self,
        pattern: list[str],
        level: str,
        start: int = 0,
        limit: int = MAX_SPANS,
        *,
        overlapping: bool = False,
    ) -> list[int]:
        """Line indexes >= start where `pattern` matches at `level` (non-overlapping unless asked)."""
        if not pattern:
            return []
        fn = NORMALISERS[level]
        want = [fn(p) for p in pattern]
        have = self.norm(level)
        n = len(want)
        first = want[0]
        out: list[int] = []
        i = start
        last = len(have) - n
        while i <= last and len(out) < limit:
            try:
                i = have.index(first, i, last + 1)
            except ValueError:
                break
            if have[i : i + n] == want:
                out.append(i)
                i += 1 if overlapping else n
            else:
                i += 1
        return out

    def seek(
        self, pattern: list[str], start: int, *, eof: bool = False, hint: int | None = None
    ) -> tuple[int, str] | None:
        """The line index where `pattern` matches at or after `start`, by the ladder. `eof`
        prefers the end of the file; `hint` (a unified diff's line number) picks the nearest of
        several matches."""
        n = len(pattern)
        for level in LEVELS:
            if eof:
                at = len(self.lines) - n
                if self._trailing_empty():
                    at -= 1
                if at >= start and self._matches_at(pattern, at, level):
                    return at, level
            if hint is not None and hint >= start and self._matches_at(pattern, hint, level):
                return hint, level  # where the diff says it is: repeated lines cannot mislead
            found = self.find_all(
                pattern,
                level,
                start,
                limit=MAX_SPANS if hint is not None else 1,
                overlapping=hint is not None,
            )
            if found:
                if hint is not None:
                    return min(found, key=lambda i: abs(i - hint)), level
                return found[0], level
        return None

    def _trailing_empty(self) -> bool:
        return bool(self.lines) and self.lines[-1] == ""

    def _matches_at(self, pattern: list[str], at: int, level: str) -> bool:
        if at < 0:
            return False
        fn = NORMALISERS[level]
        have = self.norm(level)
        return have[at : at + len(pattern)] == [fn(p) for p in pattern]
