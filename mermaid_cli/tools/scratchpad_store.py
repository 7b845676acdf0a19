"""The run's scratchpad: named text entries a call's output was saved to (`scratchpad` parameter)
instead of being returned inline. In memory, for one run; `scratchpad_read` pages an entry back
and `scratchpad_save_file` writes one to a file. Imports nothing of the tools, so `ToolContext`
can own one."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: compiled (and cached by `re`) on the first named save, not at import (issue 23)
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$"
#: all entries together; past it the oldest entries are dropped (a run must not exhaust memory)
MAX_TOTAL_CHARS = 256 * 1024 * 1024


def name_problem(name: str) -> str | None:
    """Why `name` cannot name an entry, or None."""
    if re.match(NAME, name):
        return None
    return f"scratchpad name {name!r} must be 1-64 of A-Z a-z 0-9 _ . - (starting with a letter or digit)"


@dataclass
class ScratchpadStore:
    """The run's named scratchpad entries, oldest first."""

    entries: dict[str, str] = field(default_factory=dict)

    def save(self, name: str, text: str) -> list[str]:
        """Store `text` as `name` (replacing an entry of that name); the names dropped to fit."""
        self.entries.pop(name, None)
        self.entries[name] = text
        dropped: list[str] = []
        while sum(len(t) for t in self.entries.values()) > MAX_TOTAL_CHARS and len(self.entries) > 1:
            oldest = next(iter(self.entries))
            del self.entries[oldest]
            dropped.append(oldest)
        return dropped

    def get(self, name: str) -> str | None:
        return self.entries.get(name)

    def names(self) -> list[str]:
        return list(self.entries)
