"""apply_patch: multi-file patches, all-or-nothing.

Every file's new content is computed in memory first; only when every hunk of every file applies
is one checkpoint taken and the files written (atomically, one by one). Should a write still fail
(disk full), the files already written are put back.
"""

import stat
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from mermaid_cli.core.types import ToolResult
from mermaid_cli.tools import fileio
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext, cap_text
from mermaid_cli.tools.edit import FUZZY_NOTE
from mermaid_cli.tools.files import checkpoint, path_error
from mermaid_cli.tools.patch import PatchError, apply_hunks, parse_patch
from mermaid_cli.tools.paths import (
    PathRefused,
    ResolvedPath,
    is_regular,
    lstat_in,
    resolve_for_tool,
    resolve_path,
)


class ApplyPatchArgs(ToolArgs):
    patch: str = Field(
        description=(
            "'*** Begin Patch' envelope (*** Add File/Update File/Delete File/Move to, @@ hunks of "
            "' ' '-' '+' lines, *** End Patch) or a unified diff."
        )
    )


@dataclass
class _Pending:
    """A file's contents before and after a patch, not yet written."""

    resolved: ResolvedPath
    original: bytes | None
    new: bytes | None


class ApplyPatch(Tool):
    name = "apply_patch"
    description = "Apply a multi-file patch; all files change or none do."
    Args = ApplyPatchArgs
    category = "edit"

    def file_targets(self, arguments: dict[str, Any]) -> list[tuple[str, str]]:
        """Every file the patch touches with its operation, for the gate to judge one by one: an
        add creates, an update modifies, a delete deletes, a move deletes its source and creates
        its destination. A patch that does not parse touches nothing (the tool refuses it)."""
        patch = arguments.get("patch")
        if not isinstance(patch, str):
            return []
        try:
            ops = parse_patch(patch)
        except PatchError:
            return []
        out: list[tuple[str, str]] = []
        for op in ops:
            if op.kind == "add":
                out.append((op.path, "create"))
            elif op.kind == "delete":
                out.append((op.path, "delete"))
            elif op.move_to is not None and op.move_to != op.path:
                out += [(op.path, "delete"), (op.move_to, "create")]
            else:
                out.append((op.path, "modify"))
        return out

    async def run(self, args: ApplyPatchArgs, ctx: ToolContext) -> ToolResult:
        try:
            ops = parse_patch(args.patch)
        except PatchError as exc:
            return ToolResult.error(f"patch not applied: {exc}")
        pending: dict[str, _Pending] = {}
        summary: list[str] = []
        fuzzy = False

        # Every path passes the jail (and any gate, which may await) before the first read, so
        # reads and writes below run without yielding to other tool calls of the same turn.
        # Each path is checked for the operation the gate judged it for (file_targets).
        resolved_paths: dict[str, ResolvedPath] = {}
        try:
            for path, operation in self.file_targets({"patch": args.patch}):
                resolved = await resolve_for_tool(ctx, path, operation)
                if operation == "delete":
                    # the gate judged the link itself: a patch never deletes through a symlink,
                    # also when an earlier section of it updated the same path (through the link)
                    link = resolve_path(ctx.project_root, path, follow_final=False)
                    st = lstat_in(link)
                    if st is not None and stat.S_ISLNK(st.st_mode):
                        raise PathRefused(f"{link.display} is a symbolic link; delete it with delete_file")
                resolved_paths.setdefault(path, resolved)
        except (PathRefused, OSError) as exc:
            return _prefixed(path_error("patch", exc))

        def load(path: str) -> _Pending:
            resolved = resolved_paths[path]
            key = str(resolved.path)
            if key not in pending:
                st = lstat_in(resolved)
                if st is not None and not is_regular(st):
                    raise PathRefused(f"{resolved.display} is not a regular file")
                data = fileio.read_bytes(resolved, max_bytes=fileio.MAX_EDIT_BYTES)
                pending[key] = _Pending(resolved, data, data)
            return pending[key]

        try:
            for op in ops:
                slot = load(op.path)
                name = slot.resolved.display
                if op.kind == "add":
                    if slot.new is not None:
                        raise PatchError(f"{name}: cannot add, the file already exists (use an update)")
                    slot.new = fileio.encode(op.content)
                    summary.append(f"A {name}")
                    continue
                if slot.new is None:
                    raise PatchError(f"{name}: cannot {op.kind}, the file does not exist")
                if op.kind == "delete":
                    slot.new = None
                    summary.append(f"D {name}")
                    continue
                text, _utf8 = fileio.decode(slot.new)
                if op.hunks:
                    text, was_fuzzy = apply_hunks(text, op.hunks, name)
                    fuzzy = fuzzy or was_fuzzy
                if op.move_to is not None:
                    dest = load(op.move_to)
                    if dest is not slot:
                        if dest.new is not None:
                            raise PatchError(
                                f"{name}: cannot move to {dest.resolved.display}, it already exists"
                            )
                        dest.new = fileio.encode(text)
                        slot.new = None
                        summary.append(f"R {name} -> {dest.resolved.display}")
                        continue
                slot.new = fileio.encode(text)
                summary.append(f"M {name}")
        except PatchError as exc:
            return ToolResult.error(cap_text(f"patch not applied (no file was changed): {exc}"))
        except (PathRefused, OSError, fileio.FileTooLarge) as exc:
            return _prefixed(path_error("patch", exc))

        changed = [p for p in pending.values() if p.new != p.original]
        if changed:
            checkpoint(ctx, [p.resolved for p in changed], "apply_patch")
        done: list[_Pending] = []
        try:
            for p in changed:
                _write(p.resolved, p.new)
                done.append(p)
        except (PathRefused, OSError) as exc:
            for p in reversed(done):
                try:
                    _write(p.resolved, p.original)
                except OSError:
                    pass
            return _prefixed(path_error(p.resolved.display, exc))

        files = len(summary)
        text = f"Applied patch: {files} file(s)\n" + "\n".join(summary)
        metadata: dict[str, object] = {"files_changed": [p.resolved.rel for p in changed]}
        if fuzzy:
            text += f"\n{FUZZY_NOTE}"
            metadata["fuzzy"] = True
        return ToolResult(
            content=cap_text(text), summary=f"Applied patch: {files} file(s)", metadata=metadata
        )


def _write(resolved: ResolvedPath, data: bytes | None) -> None:
    if data is None:
        if lstat_in(resolved) is not None:
            fileio.delete(resolved)
    else:
        fileio.write_bytes(resolved, data)


def _prefixed(result: ToolResult) -> ToolResult:
    return ToolResult.error(f"patch not applied: {result.content}")
