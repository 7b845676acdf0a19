"""The `---`-fenced `key: value` header of SKILL.md and prompt-command files (the Claude Code
dialect: flat keys, one line each, optional quotes). Strict where a skill needs it: a header that
is opened and never closed, or a line that is not `key: value`, is an error naming the line."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: the names skills and prompt commands may have (also what keeps `..` and `/` out of them)
NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


class FrontmatterError(ValueError):
    """The header is malformed; the message says where."""


@dataclass(frozen=True)
class Document:
    """A Markdown file split into its `---` header and its body."""

    meta: dict[str, str]
    body: str
    #: the file opened with a `---` header
    has_header: bool


def parse(text: str) -> Document:
    """Split `text` into its header keys (lower-cased) and body. No header: empty `meta`."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return Document({}, text.strip(), False)
    meta: dict[str, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        if line.strip() == "---":
            return Document(meta, "\n".join(lines[number:]).strip(), True)
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip() or key != key.lstrip():
            if line.startswith((" ", "\t")) and meta:
                continue  # a nested or continued value (YAML lists): not a key Mermaid reads
            raise FrontmatterError(f"line {number} of the header is not `key: value`")
        meta[key.strip().lower()] = value.strip().strip("\"'")
    raise FrontmatterError("the `---` header is never closed")


def one_line(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters (an index entry)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
