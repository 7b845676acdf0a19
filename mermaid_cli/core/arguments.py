"""Where tool-call arguments enter: the one parser of a model's argument JSON, and the scrubber
that keeps text the OS or the next request could not take out of the conversation.

`json.loads` accepts `"\\ud800"` and yields a lone surrogate, which cannot be encoded as UTF-8:
if it reached a tool's result or the history, the next provider request would fail to serialise.
Every string in a call's arguments is scrubbed here (a lone surrogate becomes U+FFFD), both by the
providers' parser and by `ToolCallBlock` itself, so replayed and scripted calls are covered too.
NUL bytes and over-long values are left to the tools, which refuse them with an error result.
"""

from __future__ import annotations

import json
import re
from typing import Any

# compiled (and cached by `re`) on the first lone surrogate, a rare repair (issue 23)
_SURROGATE = "[\ud800-\udfff]"


def scrub_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (unchanged when it is valid)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        # any surrogate code point in a str is lone (json.loads joins escaped pairs)
        return re.sub(_SURROGATE, "\ufffd", text)


#: how deep a call's arguments may nest: deeper, no tool means it, and Python's own recursion
#: (here, in the encoder of the next request) would end the run with exit 70
MAX_DEPTH = 64


class TooDeep(ValueError):
    """Arguments nested deeper than `MAX_DEPTH`."""


def scrub(value: Any, depth: int = 0) -> Any:
    """A JSON-shaped value with every string (keys too) scrubbed. TooDeep past `MAX_DEPTH`."""
    if isinstance(value, str):
        return scrub_text(value)
    if depth >= MAX_DEPTH and isinstance(value, dict | list | tuple):
        raise TooDeep(f"arguments nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        return {scrub_text(k) if isinstance(k, str) else k: scrub(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v, depth + 1) for v in value]
    return value


def parse_tool_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """(arguments, None) for a JSON object; (None, raw text) for anything else (nested deeper than
    `MAX_DEPTH` too). Empty is `{}`."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
        if isinstance(value, dict):
            return scrub(value), None
    except (ValueError, RecursionError):  # TooDeep is a ValueError
        pass
    return None, scrub_text(raw)
