"""Turn raw process output into text a model (and a JSON line) can carry.

Bytes are decoded as UTF-8 with replacement, terminal escapes are dropped, a carriage return
keeps only what a terminal would finally show on that line (progress bars collapse), and every
other control character except newline and tab is removed (NULs included).
"""

from __future__ import annotations

import re

# CSI (colours, cursor moves), OSC (titles, hyperlinks) and two-byte escapes.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def clean_line(line: str) -> str:
    """Clean one line (no newline inside)."""
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "\r" in line:
        segments = [s for s in line.rstrip("\r").split("\r") if s]
        line = segments[-1] if segments else ""
    return _CONTROL.sub("", line)


def clean_text(text: str) -> str:
    return "\n".join(clean_line(line) for line in text.split("\n"))


def clean_bytes(data: bytes) -> str:
    return clean_text(decode(data))
