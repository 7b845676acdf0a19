"""read_file, write_file, delete_file, create_directory.

Every path goes through the path jail (`tools/paths.py`); mutations take a checkpoint first
(`ctx.checkpoint`) and write atomically. The tools do their file work without awaiting between
read and write, so concurrent calls in one event loop cannot interleave on the same file.
"""

from __future__ import annotations

import base64
import io
import os
import stat
from collections.abc import Iterator
from typing import Any, BinaryIO

from pydantic import Field

from mermaid_cli.core.types import ImageData, ToolResult
from mermaid_cli.tools import fileio
from mermaid_cli.tools.base import MAX_RESULT_CHARS, Tool, ToolArgs, ToolContext, cap_text
from mermaid_cli.tools.paths import PathRefused, ResolvedPath, lstat_in, open_file, resolve_for_tool

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_IMAGE_BYTES = int(3.75 * 1024 * 1024)
BINARY_SNIFF_BYTES = 8192
MAX_DIR_ENTRIES = 1000


class CheckpointFailed(OSError):
    """The checkpoint a change takes first could not be taken (in the data directory, not the
    project): nothing was changed."""


def path_error(path: str, exc: BaseException) -> ToolResult:
    """Expected failures as data for the model."""
    if isinstance(exc, CheckpointFailed):
        return ToolResult.error(f"{path}: not changed: {exc.strerror}")
    if isinstance(exc, PathRefused | fileio.FileTooLarge):
        return ToolResult.error(str(exc))
    if isinstance(exc, FileNotFoundError):
        return ToolResult.error(f"{path} does not exist")
    if isinstance(exc, NotADirectoryError):
        return ToolResult.error(f"{path}: a component of the path is not a directory")
    if isinstance(exc, PermissionError):
        return ToolResult.error(f"{path}: permission denied")
    if isinstance(exc, OSError):
        return ToolResult.error(f"{path}: {exc.strerror or exc}")
    raise exc


def _one(arguments: dict[str, Any], operation: str) -> list[tuple[str, str]]:
    path = arguments.get("path")
    return [(path, operation)] if isinstance(path, str) else []


def checkpoint(ctx: ToolContext, resolved: list[ResolvedPath], reason: str) -> None:
    """The checkpoint before a change; CheckpointFailed, saying where, when it cannot be taken (a
    read-only data directory read as "hello.txt: Read-only file system")."""
    if ctx.checkpoint is None:
        return
    try:
        ctx.checkpoint([r.path for r in resolved], reason)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise CheckpointFailed(
            exc.errno, f"no checkpoint could be taken first: {exc.strerror or exc}{where}"
        ) from None


def image_type(head: bytes) -> str | None:
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


# --- read_file -------------------------------------------------------------------------------


class ReadFileArgs(ToolArgs):
    path: str = Field(description="File or directory path, relative to the project root.")
    offset: int | None = Field(default=None, ge=1, description="First line to read, 1-based.")
    limit: int | None = Field(default=None, ge=1, description=f"Lines to read (default {DEFAULT_LIMIT}).")


def _lines(fh: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """(line without its newline, cut) with bounded memory: a line longer than the display limit
    keeps only its head, the rest is skipped in chunks."""
    cap = MAX_LINE_CHARS * 4  # bytes enough for MAX_LINE_CHARS characters of UTF-8
    while True:
        line = fh.readline(cap + 1)
        if not line:
            return
        if line.endswith(b"\n") or len(line) <= cap:
            yield line.rstrip(b"\n").removesuffix(b"\r"), False
            continue
        while True:  # skip the rest of an overlong line
            rest = fh.readline(1 << 16)
            if not rest or rest.endswith(b"\n"):
                break
        yield line, True


def _show_line(raw: bytes, cut: bool) -> str:
    text = raw.decode("utf-8", errors="replace")
    if cut or len(text) > MAX_LINE_CHARS:
        return text[:MAX_LINE_CHARS] + " [... line cut at 2000 chars]"
    return text


class ReadFile(Tool):
    name = "read_file"
    description = (
        "Read a text file with 1-based line numbers (or list a directory). Images (PNG/JPEG/GIF/WebP) "
        "are returned as images."
    )
    Args = ReadFileArgs
    category = "read"

    def file_targets(self, arguments: dict[str, Any]) -> list[tuple[str, str]]:
        """(path as spelled, operation) for the gate, which resolves and judges each."""
        return _one(arguments, "read")

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
        try:
            resolved = await resolve_for_tool(ctx, args.path, "read")
            fd = open_file(resolved)
        except (PathRefused, OSError) as exc:
            return path_error(args.path, exc)
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                return self._list_dir(fd, resolved)
            if not stat.S_ISREG(st.st_mode):
                return ToolResult.error(f"{resolved.display} is not a regular file")
            fh = io.BufferedReader(io.FileIO(fd, "rb", closefd=True), buffer_size=1 << 16)
            fd = -1  # owned by fh now
            with fh:
                return self._read(fh, st.st_size, resolved, args)
        except OSError as exc:
            return path_error(args.path, exc)
        finally:
            if fd >= 0:
                os.close(fd)

    def _list_dir(self, fd: int, resolved: ResolvedPath) -> ToolResult:
        entries = []
        with os.scandir(fd) as it:
            for entry in it:
                kind = "/" if entry.is_dir(follow_symlinks=False) else ("@" if entry.is_symlink() else "")
                entries.append(entry.name + kind)
        entries.sort()
        total = len(entries)
        shown = entries[:MAX_DIR_ENTRIES]
        text = "\n".join(shown) if shown else "(empty directory)"
        if total > len(shown):
            text += f"\n[... {total - len(shown)} more entries not shown]"
        return ToolResult(
            content=cap_text(f"{resolved.display}/ ({total} entries)\n{text}"),
            summary=f"Listed {resolved.display} ({total} entries)",
        )

    def _read(
        self, fh: io.BufferedReader[io.FileIO], size: int, resolved: ResolvedPath, args: ReadFileArgs
    ) -> ToolResult:
        head = fh.peek(BINARY_SNIFF_BYTES)[:BINARY_SNIFF_BYTES]
        media = image_type(head)
        if media is not None:
            if size > MAX_IMAGE_BYTES:
                return ToolResult.error(
                    f"{resolved.display} is a {media} of {size} bytes, over the {MAX_IMAGE_BYTES}-byte image limit"
                )
            data = fh.read()
            note = f"[{media}, {len(data)} bytes]"
            return ToolResult(
                content=note,
                summary=f"Read {resolved.display} {note}",
                images=(ImageData(media_type=media, data=base64.b64encode(data).decode("ascii")),),
            )
        if b"\x00" in head:
            return ToolResult.error(f"{resolved.display} is a binary file ({size} bytes); not shown")
        if size == 0:
            return ToolResult(
                content=f"{resolved.display} is empty", summary=f"Read {resolved.display} (empty)"
            )
        offset = args.offset or 1
        limit = args.limit or DEFAULT_LIMIT
        out: list[str] = []
        more = False
        number = 0
        # stop at whole lines before the result cap, so the model can page on from a known line
        budget = MAX_RESULT_CHARS - 200
        for number, (raw, cut) in enumerate(_lines(fh), start=1):
            if number < offset:
                continue
            line = f"{number:>6}\t{_show_line(raw, cut)}"
            budget -= len(line) + 1
            if len(out) >= limit or (budget < 0 and out):
                more = True
                break
            out.append(line)
        if not out:
            return ToolResult.error(f"offset {offset} is past the end of {resolved.display} ({number} lines)")
        last = offset + len(out) - 1
        text = "\n".join(out)
        if more:
            text += f"\n[... more lines follow; read on with offset={last + 1}]"
        return ToolResult(content=cap_text(text), summary=f"Read {resolved.display} (lines {offset}-{last})")


# --- write_file ------------------------------------------------------------------------------


class WriteFileArgs(ToolArgs):
    path: str = Field(description="File path, relative to the project root.")
    content: str = Field(description="The whole new content of the file.")


async def write_whole(ctx: ToolContext, path: str, content: str, reason: str) -> ResolvedPath | ToolResult:
    """Create or replace the file at `path` with `content` (jailed, checkpointed, atomic): the
    resolved path, or the error result."""
    try:
        resolved = await resolve_for_tool(ctx, path, "write")
        existing = lstat_in(resolved)
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            return ToolResult.error(f"{resolved.display} is a directory")
        checkpoint(ctx, [resolved], reason)
        fileio.write_bytes(resolved, fileio.encode(content))
    except (PathRefused, OSError) as exc:
        return path_error(path, exc)
    return resolved


class WriteFile(Tool):
    name = "write_file"
    description = "Create or overwrite a file with the given content; parent directories are created."
    Args = WriteFileArgs
    category = "edit"

    def file_targets(self, arguments: dict[str, Any]) -> list[tuple[str, str]]:
        return _one(arguments, "write")  # the gate tells create from modify

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        resolved = await write_whole(ctx, args.path, args.content, "write_file")
        if isinstance(resolved, ToolResult):
            return resolved
        lines = fileio.count_lines(args.content)
        message = f"Wrote {resolved.display} ({lines} lines)"
        return ToolResult(content=message, summary=message, metadata={"files_changed": [resolved.rel]})


# --- delete_file -----------------------------------------------------------------------------


class DeleteFileArgs(ToolArgs):
    path: str = Field(description="File path, relative to the project root.")


class DeleteFile(Tool):
    name = "delete_file"
    description = "Delete a file (not a directory)."
    Args = DeleteFileArgs
    category = "edit"

    def file_targets(self, arguments: dict[str, Any]) -> list[tuple[str, str]]:
        return _one(arguments, "delete")  # judged on the link itself, not its target

    async def run(self, args: DeleteFileArgs, ctx: ToolContext) -> ToolResult:
        try:
            # the final component is not followed: a symlink is removed, its target left alone
            resolved = await resolve_for_tool(ctx, args.path, "delete", follow_final=False)
            existing = lstat_in(resolved)
            if existing is None:
                return ToolResult.error(f"{args.path} does not exist")
            if stat.S_ISDIR(existing.st_mode):
                return ToolResult.error(f"{resolved.display} is a directory; delete_file removes files only")
            checkpoint(ctx, [resolved], "delete_file")
            fileio.delete(resolved)
        except (PathRefused, OSError) as exc:
            return path_error(args.path, exc)
        message = f"Deleted {resolved.display}"
        return ToolResult(content=message, summary=message, metadata={"files_changed": [resolved.rel]})


# --- create_directory ------------------------------------------------------------------------


class CreateDirectoryArgs(ToolArgs):
    path: str = Field(description="Directory path, relative to the project root; parents are created.")


class CreateDirectory(Tool):
    name = "create_directory"
    description = "Create a directory and any missing parents (mkdir -p)."
    Args = CreateDirectoryArgs
    category = "edit"

    def file_targets(self, arguments: dict[str, Any]) -> list[tuple[str, str]]:
        return _one(arguments, "create")

    async def run(self, args: CreateDirectoryArgs, ctx: ToolContext) -> ToolResult:
        try:
            resolved = await resolve_for_tool(ctx, args.path, "create")
            existing = lstat_in(resolved)
            if existing is not None:
                if stat.S_ISDIR(existing.st_mode):
                    message = f"{resolved.display} already exists"
                    return ToolResult(content=message, summary=message)
                return ToolResult.error(f"{resolved.display} exists and is not a directory")
            checkpoint(ctx, [resolved], "create_directory")
            fileio.make_dirs(resolved)
        except (PathRefused, OSError) as exc:
            return path_error(args.path, exc)
        message = f"Created directory {resolved.display}"
        return ToolResult(content=message, summary=message, metadata={"files_changed": [resolved.rel]})
