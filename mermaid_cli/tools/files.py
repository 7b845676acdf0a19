"""read_file and write_file (minimal; the file tools issue completes them)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pydantic import Field

from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext, cap_text
from mermaid_cli.types import ToolResult


def resolve_in_project(root: Path, path: str) -> Path | None:
    """The absolute path for `path` inside `root`, or None when it leads outside."""
    root = root.resolve()
    target = (root / path).resolve()
    if target == root or root in target.parents:
        return target
    return None


class ReadFileArgs(ToolArgs):
    path: str = Field(description="File path, relative to the project root.")


class ReadFile(Tool):
    name = "read_file"
    description = "Read a text file of the project."
    Args = ReadFileArgs
    category = "read"

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
        target = resolve_in_project(ctx.project_root, args.path)
        if target is None:
            return ToolResult.error(f"{args.path} is outside the project")
        try:
            text = target.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ToolResult.error(f"{args.path} does not exist")
        except IsADirectoryError:
            return ToolResult.error(f"{args.path} is a directory")
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        return ToolResult(content=cap_text(text), summary=f"Read {args.path} ({lines} lines)")


class WriteFileArgs(ToolArgs):
    path: str = Field(description="File path, relative to the project root.")
    content: str = Field(description="The whole new content of the file.")


class WriteFile(Tool):
    name = "write_file"
    description = "Create or overwrite a file with the given content; parent directories are created."
    Args = WriteFileArgs
    category = "edit"

    async def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        target = resolve_in_project(ctx.project_root, args.path)
        if target is None:
            return ToolResult.error(f"{args.path} is outside the project")
        if ctx.checkpoint is not None:
            ctx.checkpoint([target], "write_file")
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(args.content)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        lines = args.content.count("\n") + (0 if args.content.endswith("\n") or not args.content else 1)
        return ToolResult(
            content=f"Wrote {args.path} ({lines} lines)",
            summary=f"Wrote {args.path} ({lines} lines)",
            metadata={"files_changed": [str(target.relative_to(ctx.project_root.resolve()))]},
        )
