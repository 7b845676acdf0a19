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


def scrub(value: Any) -> Any:
    """A JSON-shaped value with every string (keys too) scrubbed."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {scrub_text(k) if isinstance(k, str) else k: scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    return value


def parse_tool_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """(arguments, None) for a JSON object; (None, raw text) for anything else. Empty is `{}`."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError:
        return None, scrub_text(raw)
    if isinstance(value, dict):
        return scrub(value), None
    return None, scrub_text(raw)
