"""Cutting long text to a budget: the one truncation every layer uses (tool results, event fields,
verify output), so a reader always sees the same marker and knows how much was cut."""

from __future__ import annotations


def cap_text(text: str, limit: int, *, head_share: float = 2 / 3) -> str:
    """`text` within `limit` characters: the first `head_share` of the budget from its start, the
    rest from its end, and a line saying how many characters were cut between them. `head_share`
    0 keeps only the end (command output, where the last lines say what failed)."""
    if len(text) <= limit:
        return text
    head = int(limit * head_share)
    tail = limit - head
    marker = f"[... {len(text) - limit} characters cut ...]"
    start = f"{text[:head]}\n" if head else ""
    end = f"\n{text[-tail:]}" if tail else ""
    return f"{start}{marker}{end}"
