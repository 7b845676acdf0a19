"""What an approved file edit would do, as a diff per file: the preview an approval prompt shows
for `edit_file`, `write_file` and `apply_patch`. Computed from the call's arguments (as the
`tool_started` event carries them: redacted, capped) and the files on disk; never writes.
No `rich` here: `approval.py` colours the lines."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

#: a file bigger than this is not read for a preview (the diff would not fit a screen anyway)
MAX_PREVIEW_BYTES = 2 * 1024 * 1024
_CUT = re.compile(r"\[\.\.\. \d+ characters cut \.\.\.\]")

LineKind = Literal["+", "-", " ", "@", "!"]


@dataclass
class FilePreview:
    """One file's part of a preview: `src/users.py +2 -1` and its diff lines."""

    path: str
    added: int = 0
    removed: int = 0
    lines: list[tuple[LineKind, str]] = field(default_factory=list)
    #: a caveat shown under the header (a new file, a cut argument, a patch that does not apply)
    note: str = ""

    @property
    def header(self) -> str:
        return f"{self.path} +{self.added} -{self.removed}"


def preview(tool: str, arguments: dict[str, Any] | None, root: Path) -> list[FilePreview] | None:
    """The diff preview of a file-changing call, or None for any other tool."""
    args = arguments or {}
    if tool == "edit_file" and isinstance(args.get("path"), str):
        return [_edit_preview(args, root)]
    if tool == "write_file" and isinstance(args.get("path"), str):
        return [_write_preview(args, root)]
    if tool == "apply_patch" and isinstance(args.get("patch"), str):
        return _patch_preview(args["patch"], root)
    return None


def _edit_preview(args: dict[str, Any], root: Path) -> FilePreview:
    path = args["path"]
    target = str(args.get("target_content") or "")
    replacement = str(args.get("replacement_content") or "")
    old = _read(root, path)
    if old is not None and target and target in old:
        count = -1 if args.get("allow_multiple") else 1
        result = _diff(path, old, old.replace(target, replacement, count))
    else:
        # not found verbatim: the tool's match ladder may still place it; show the two texts
        result = _diff(path, target, replacement)
        result.note = "the exact text is not in the file as it is now; the tool may match it loosely"
    if _CUT.search(target) or _CUT.search(replacement):
        result.note = "the preview is cut: the arguments are longer than a tool_started event holds"
    return result


def _write_preview(args: dict[str, Any], root: Path) -> FilePreview:
    path = args["path"]
    content = str(args.get("content") or "")
    old = _read(root, path)
    result = _diff(path, old or "", content)
    if old is None:
        result.note = "a new file"
    if _CUT.search(content):
        result.note = "the preview is cut: the content is longer than a tool_started event holds"
    return result


def _patch_preview(patch: str, root: Path) -> list[FilePreview]:
    from mermaid_cli.tools.patch import PatchError, apply_hunks, parse_patch

    try:
        ops = parse_patch(patch)
    except PatchError as exc:
        return [FilePreview(path="(patch)", note=f"the patch does not parse: {exc}")]
    previews: list[FilePreview] = []
    for op in ops:
        old = _read(root, op.path)
        if op.kind == "add":
            item = _diff(op.path, "", op.content)
            item.note = "a new file"
        elif op.kind == "delete":
            item = _diff(op.path, old or "", "")
            item.note = "deleted"
        else:
            try:
                new, _fuzzy = apply_hunks(old or "", op.hunks, op.path)
                item = _diff(op.path, old or "", new)
            except PatchError as exc:
                item = FilePreview(path=op.path, note=f"does not apply to the file as it is now: {exc}")
                for hunk in op.hunks:
                    item.lines.append(("@", hunk.header or "@@"))
                    item.lines += [("-", line) for line in hunk.old]
                    item.lines += [("+", line) for line in hunk.new]
        if op.move_to:
            item.note = f"moved to {op.move_to}" + (f"; {item.note}" if item.note else "")
        previews.append(item)
    return previews


def _diff(path: str, old: str, new: str) -> FilePreview:
    result = FilePreview(path=path)
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), n=3, lineterm="")
    for line in lines:
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            result.lines.append(("@", line))
        elif line.startswith("+"):
            result.added += 1
            result.lines.append(("+", line[1:]))
        elif line.startswith("-"):
            result.removed += 1
            result.lines.append(("-", line[1:]))
        else:
            result.lines.append((" ", line[1:]))
    return result


def _read(root: Path, path: str) -> str | None:
    """The file's text now, or None (absent, unreadable, too big for a preview)."""
    full = Path(os.path.expanduser(path))
    if not full.is_absolute():
        full = root / full
    try:
        if full.stat().st_size > MAX_PREVIEW_BYTES:
            return None
        return full.read_text(encoding="utf-8", errors="replace")
    except (OSError, ValueError):
        return None
