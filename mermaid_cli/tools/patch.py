"""Patch engine: parse the `*** Begin Patch` envelope or a plain unified diff into file
operations, and apply hunks to text with the shared match ladder. Pure: no file system here
(`apply_patch.py` does I/O, all-or-nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from mermaid_cli.tools.matching import EXACT, LineIndex


class PatchError(Exception):
    """A patch that cannot be parsed or applied; the message names the file and hunk."""


@dataclass
class Hunk:
    """One hunk of a file patch."""

    header: str
    anchor: str | None = None
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    #: 1-based first old line from a unified range header
    old_start: int | None = None
    eof: bool = False
    #: "\ No newline at end of file" seen after an old-side / new-side line
    old_no_newline: bool = False
    new_no_newline: bool = False
    #: the hunk's line kinds in order: " " context, "-" removed, "+" added
    tags: list[str] = field(default_factory=list)
    #: bare empty lines at the end so far (envelope): blank lines before a header, not context
    trailing_blank: int = 0


@dataclass
class FilePatch:
    """What a patch does to one file."""

    kind: Literal["add", "update", "delete"]
    path: str
    move_to: str | None = None
    hunks: list[Hunk] = field(default_factory=list)
    #: the whole content of an added file
    content: str = ""


RANGE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")


def parse_patch(text: str) -> list[FilePatch]:
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if any(line.strip() == "*** Begin Patch" for line in lines):
        ops = _parse_envelope(lines)
    elif any(line.startswith("--- ") for line in lines) and any(line.startswith("+++ ") for line in lines):
        ops = _parse_unified(lines)
    else:
        raise PatchError("not a patch: expected a '*** Begin Patch' envelope or a unified diff (---/+++/@@)")
    if not ops:
        raise PatchError("the patch contains no file operations")
    return ops


# --- the envelope ----------------------------------------------------------------------------


def _parse_envelope(lines: list[str]) -> list[FilePatch]:
    i = next(k for k, line in enumerate(lines) if line.strip() == "*** Begin Patch") + 1
    ops: list[FilePatch] = []
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped == "*** End Patch":
            return ops
        if stripped == "":
            i += 1
            continue
        if line.startswith("*** Add File: "):
            op = FilePatch("add", line[len("*** Add File: ") :].strip())
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith("*** "):
                if lines[i].startswith("+"):
                    body.append(lines[i][1:])
                elif lines[i].strip() != "":
                    raise PatchError(f"{op.path}: line {lines[i]!r} in an added file must start with '+'")
                i += 1
            op.content = "\n".join(body) + ("\n" if body else "")
            ops.append(op)
        elif line.startswith("*** Delete File: "):
            ops.append(FilePatch("delete", line[len("*** Delete File: ") :].strip()))
            i += 1
        elif line.startswith("*** Update File: "):
            op = FilePatch("update", line[len("*** Update File: ") :].strip())
            i += 1
            if i < len(lines) and lines[i].startswith("*** Move to: "):
                op.move_to = lines[i][len("*** Move to: ") :].strip()
                i += 1
            i = _parse_envelope_hunks(lines, i, op)
            ops.append(op)
        else:
            raise PatchError(f"unexpected line in patch: {line!r}")
    return ops  # a missing "*** End Patch" is forgiven


def _parse_envelope_hunks(lines: list[str], i: int, op: FilePatch) -> int:
    hunk: Hunk | None = None
    while i < len(lines):
        line = lines[i]
        if line.startswith("*** ") and line.strip() != "*** End of File":
            break
        if line.strip() == "*** End of File":
            if hunk is None:
                raise PatchError(f"{op.path}: '*** End of File' outside a hunk")
            hunk.eof = True
        elif line.startswith("@@"):
            hunk = _new_hunk(line)
            op.hunks.append(hunk)
        else:
            if hunk is None:  # the first hunk may come without an @@ line
                hunk = Hunk(header="@@")
                op.hunks.append(hunk)
            _hunk_line(hunk, line, op.path)
        i += 1
    for h in op.hunks:
        if h.trailing_blank:
            del h.old[-h.trailing_blank :]
            del h.new[-h.trailing_blank :]
            del h.tags[-h.trailing_blank :]
    op.hunks = [h for h in op.hunks if h.old or h.new]
    if not op.hunks and op.move_to is None:
        raise PatchError(f"{op.path}: update without any hunk")
    return i


def _new_hunk(line: str) -> Hunk:
    m = RANGE.match(line)
    if m:
        return Hunk(header=line.strip(), old_start=int(m.group(1)))
    anchor = line[2:].strip()
    return Hunk(header=line.strip(), anchor=anchor or None)


def _hunk_line(hunk: Hunk, line: str, path: str) -> None:
    hunk.trailing_blank = hunk.trailing_blank + 1 if line == "" else 0
    if line == "" or line.startswith(" "):
        hunk.old.append(line[1:])
        hunk.new.append(line[1:])
        hunk.tags.append(" ")
    elif line.startswith("-"):
        hunk.old.append(line[1:])
        hunk.tags.append("-")
    elif line.startswith("+"):
        hunk.new.append(line[1:])
        hunk.tags.append("+")
    elif line.startswith("\\"):
        pass
    else:
        raise PatchError(f"{path}: hunk {hunk.header!r}: line {line!r} must start with ' ', '-' or '+'")


# --- unified diffs ---------------------------------------------------------------------------


def _diff_path(raw: str) -> str | None:
    path = raw.split("\t")[0].strip()
    if path == "/dev/null":
        return None
    if len(path) > 2 and path[1] == "/" and path[0] in "abciwo":
        path = path[2:]
    return path


def _parse_unified(lines: list[str]) -> list[FilePatch]:
    ops: list[FilePatch] = []
    i = 0
    while i < len(lines):
        if not (lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")):
            i += 1
            continue
        old = _diff_path(lines[i][4:])
        new = _diff_path(lines[i + 1][4:])
        i += 2
        hunks: list[Hunk] = []
        while i < len(lines) and lines[i].startswith("@@"):
            hunk, i = _parse_unified_hunk(lines, i, new or old or "?")
            hunks.append(hunk)
        if old is None and new is None:
            raise PatchError("a diff from /dev/null to /dev/null")
        if old is None:
            assert new is not None
            body = [line for h in hunks for line in h.new]
            no_nl = any(h.new_no_newline for h in hunks)
            content = "\n".join(body) + ("\n" if body and not no_nl else "")
            ops.append(FilePatch("add", new, content=content))
        elif new is None:
            ops.append(FilePatch("delete", old))
        else:
            if not hunks and old == new:
                raise PatchError(f"{old}: diff without any hunk")
            ops.append(FilePatch("update", old, move_to=new if new != old else None, hunks=hunks))
    return ops


def _parse_unified_hunk(lines: list[str], i: int, path: str) -> tuple[Hunk, int]:
    header = lines[i]
    m = RANGE.match(header)
    if not m:
        raise PatchError(f"{path}: bad hunk header {header!r}; expected '@@ -a,b +c,d @@'")
    hunk = Hunk(header=header.split(" @@")[0] + " @@", old_start=int(m.group(1)))
    old_left = int(m.group(2)) if m.group(2) is not None else 1
    new_left = int(m.group(4)) if m.group(4) is not None else 1
    i += 1
    last = ""
    while i < len(lines) and (old_left > 0 or new_left > 0):
        line = lines[i]
        if line.startswith("\\"):
            _mark_no_newline(hunk, last)
        elif line == "" or line.startswith(" "):
            if i == len(lines) - 1 and line == "":
                break  # the newline that ends the patch text, not an empty context line
            hunk.old.append(line[1:])
            hunk.new.append(line[1:])
            old_left -= 1
            new_left -= 1
            last = " "
            hunk.tags.append(" ")
        elif line.startswith("-"):
            hunk.old.append(line[1:])
            old_left -= 1
            last = "-"
            hunk.tags.append("-")
        elif line.startswith("+"):
            hunk.new.append(line[1:])
            new_left -= 1
            last = "+"
            hunk.tags.append("+")
        else:
            break
        i += 1
    if i < len(lines) and lines[i].startswith("\\"):
        _mark_no_newline(hunk, last)
        i += 1
    if old_left > 0 or new_left > 0:
        raise PatchError(
            f"{path}: hunk {hunk.header!r} is truncated: {old_left} old and {new_left} new line(s) missing"
        )
    return hunk, i


def _mark_no_newline(hunk: Hunk, last: str) -> None:
    if last in (" ", "-"):
        hunk.old_no_newline = True
    if last in (" ", "+"):
        hunk.new_no_newline = True


# --- applying --------------------------------------------------------------------------------


def apply_hunks(content: str, hunks: list[Hunk], path: str) -> tuple[str, bool]:
    """The new content and whether any hunk matched only fuzzily. Hunks apply in order to
    non-overlapping places of the original; a hunk that cannot be placed raises PatchError.

    Line endings are kept per line: lines the patch leaves (context included) keep their own
    `\r\n` or `\n`; added lines take the file's majority ending."""
    raw = content.split("\n")
    # an empty file gains lines ending in newlines, like any file written from scratch
    final_newline = content == "" or (len(raw) > 1 and raw[-1] == "")
    if final_newline:
        raw.pop()
    if "\r" in content:
        crs = [line.endswith("\r") for line in raw]
        lines = [line[:-1] if cr else line for line, cr in zip(raw, crs, strict=True)]
    else:  # the common case, kept cheap for big files
        crs = [False] * len(raw)
        lines = raw
    crlf = sum(crs) * 2 > len(crs)
    index = LineIndex(lines)
    fuzzy = False
    cursor = 0
    edits: list[tuple[int, int, list[tuple[str, bool]]]] = []
    for number, hunk in enumerate(hunks, start=1):
        where = f"{path}: hunk {number} ({hunk.header})"
        start = cursor
        if hunk.anchor is not None:
            found = index.seek([hunk.anchor], cursor)
            if found is None:
                raise PatchError(f"{where} does not apply: anchor line {hunk.anchor!r} not found")
            start, level = found
            fuzzy = fuzzy or level != EXACT
            if not hunk.old:
                start += 1
        hint = hunk.old_start - 1 if hunk.old_start else None
        if not hunk.old:
            if hunk.old_start is not None:
                at = max(min(hunk.old_start, len(lines)), cursor)
            elif hunk.anchor is not None:
                at = start
            else:
                at = len(lines)
            edits.append((at, at, [(text, crlf) for text in hunk.new]))
            cursor = at
        else:
            found = index.seek(hunk.old, start, eof=hunk.eof, hint=hint)
            if found is None:
                raise PatchError(
                    f"{where} does not apply: its context/removed lines were not found:\n" + _show(hunk.old)
                )
            at, level = found
            fuzzy = fuzzy or level != EXACT
            edits.append((at, at + len(hunk.old), _merged(hunk, lines, crs, at, crlf)))
            cursor = at + len(hunk.old)
        if hunk.new_no_newline:
            final_newline = False
        elif hunk.old_no_newline:
            final_newline = True
    out: list[str] = []
    last = 0
    for begin, end, new in edits:
        out.extend(_with_cr(lines, crs, last, begin))
        out.extend(text + ("\r" if cr else "") for text, cr in new)
        last = end
    out.extend(_with_cr(lines, crs, last, len(lines)))
    text = "\n".join(out)
    if out and final_newline:
        text += "\n"
    return text, fuzzy


def _with_cr(lines: list[str], crs: list[bool], begin: int, end: int) -> list[str]:
    if not any(crs[begin:end]):
        return lines[begin:end]
    return [line + ("\r" if cr else "") for line, cr in zip(lines[begin:end], crs[begin:end], strict=True)]


def _merged(hunk: Hunk, lines: list[str], crs: list[bool], at: int, crlf: bool) -> list[tuple[str, bool]]:
    """The hunk's new lines with its context lines taken from the file: a fuzzy match must not
    rewrite lines the patch did not mean to change (whitespace, line endings)."""
    if len(hunk.tags) != len(hunk.old) + len(hunk.new) - hunk.tags.count(" "):
        return [(text, crlf) for text in hunk.new]
    out: list[tuple[str, bool]] = []
    k = at
    new_iter = iter(hunk.new)
    for tag in hunk.tags:
        if tag == " ":
            out.append((lines[k], crs[k]))
            next(new_iter)
            k += 1
        elif tag == "-":
            k += 1
        else:
            out.append((next(new_iter), crlf))
    return out


def _show(lines: list[str], limit: int = 8) -> str:
    shown = "\n".join(f"  | {line}" for line in lines[:limit])
    if len(lines) > limit:
        shown += f"\n  | ... ({len(lines) - limit} more)"
    return shown
