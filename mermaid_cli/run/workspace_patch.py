"""Git-style patch text for the changes a stat snapshot found (`git apply` and `patch -p1` take it).

Modes travel as git's `new file mode` / `deleted file mode` / `old mode`+`new mode` lines. A file
whose earlier content was not kept (see `workspace_stat`) gets a `diff --mermaid` note that
`git apply` skips as text between patches, so the rest of the patch still applies.
"""

from __future__ import annotations

import difflib
import stat
from collections.abc import Callable
from pathlib import Path

from mermaid_cli.run.workspace_stat import Change, read_content


def _mode(mode: int | None) -> str:
    if mode is None:
        return "100644"
    if stat.S_ISLNK(mode):
        return "120000"
    return "100755" if mode & 0o111 else "100644"


def _lines(data: bytes) -> list[str] | None:
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "surrogateescape").splitlines(keepends=True)


def render(root: Path, changes: list[Change], before: Callable[[str], bytes | None]) -> str:
    return "".join(_one(root, change, before) for change in changes)


def _one(root: Path, change: Change, before: Callable[[str], bytes | None]) -> str:
    rel = change.rel
    old_mode, new_mode = change.old_mode, change.new_mode
    if old_mode is not None and new_mode is not None and stat.S_ISLNK(old_mode) != stat.S_ISLNK(new_mode):
        # a file became a symlink or back: git writes a deletion and a creation, not a mode change
        gone, made = Change(rel, "deleted", old_mode, None), Change(rel, "created", None, new_mode)
        return _one(root, gone, before) + _one(root, made, before)
    head = [f"diff --git a/{rel} b/{rel}\n"]
    old: bytes | None = b""
    new: bytes | None = b""
    if change.kind == "created":
        head.append(f"new file mode {_mode(change.new_mode)}\n")
    else:
        old = before(rel)
        if old is None:
            return (
                f"diff --mermaid a/{rel} b/{rel}\n"
                f"# {rel} was {change.kind}; its content before the run was not kept (a shell command "
                "changed it in a tree too large to copy): no hunk\n"
            )
    if change.kind == "deleted":
        head.append(f"deleted file mode {_mode(change.old_mode)}\n")
    else:
        new = read_content(root / rel)
        if new is None:
            new = b""
    if change.kind == "modified" and _mode(change.old_mode) != _mode(change.new_mode):
        head.append(f"old mode {_mode(change.old_mode)}\nnew mode {_mode(change.new_mode)}\n")
    if old == new:
        return "".join(head) if len(head) > 1 else ""
    a_lines, b_lines = _lines(old or b""), _lines(new or b"")
    a_name = "/dev/null" if change.kind == "created" else f"a/{rel}"
    b_name = "/dev/null" if change.kind == "deleted" else f"b/{rel}"
    if a_lines is None or b_lines is None:
        return "".join(head) + f"Binary files {a_name} and {b_name} differ\n"
    out = head
    for line in difflib.unified_diff(a_lines, b_lines, a_name, b_name):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)
