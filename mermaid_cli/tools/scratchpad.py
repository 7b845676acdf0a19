"""`scratchpad_read` and `scratchpad_save_file`: the tools over the run's scratchpad
(`tools.scratchpad_store`). Saving to an entry is the `scratchpad` parameter every tool takes
(`tools.call_options`); `scratchpad_save_file` is a write and the gate judges it as one, on the
path it writes, exactly as `write_file`."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from mermaid_cli.core.types import ToolResult
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext
from mermaid_cli.tools.files import write_whole
from mermaid_cli.tools.scratchpad_store import ScratchpadStore

PAGE_CHARS = 30_000


def _store(ctx: ToolContext) -> ScratchpadStore:
    return ctx.scratchpad


def _missing(ctx: ToolContext, name: str) -> ToolResult:
    names = ", ".join(_store(ctx).names()) or "none yet"
    return ToolResult.error(f"no scratchpad entry {name!r}; entries: {names}")


class ScratchpadReadArgs(ToolArgs):
    name: str | None = Field(default=None, description="Entry to read; omit to list the entries.")
    offset: int = Field(default=0, ge=0, description="First character to return (paging).")
    length: int = Field(
        default=PAGE_CHARS, ge=1, le=PAGE_CHARS, description=f"Characters to return (max {PAGE_CHARS})."
    )


class ScratchpadRead(Tool):
    name = "scratchpad_read"
    description = "Read a scratchpad entry (a tool output saved with the scratchpad parameter), paged."
    Args = ScratchpadReadArgs
    category = "session"

    async def run(self, args: ScratchpadReadArgs, ctx: ToolContext) -> ToolResult:
        store = _store(ctx)
        if args.name is None:
            if not store.names():
                return ToolResult(content="The scratchpad is empty.", summary="0 entries")
            lines = [f"{n} ({len(store.entries[n])} characters)" for n in store.names()]
            return ToolResult(content="\n".join(lines), summary=f"{len(lines)} entries")
        text = store.get(args.name)
        if text is None:
            return _missing(ctx, args.name)
        if args.offset > len(text):
            return ToolResult.error(
                f"offset {args.offset} is past the end of {args.name} ({len(text)} characters)"
            )
        end = min(len(text), args.offset + args.length)
        body = text[args.offset : end]
        head = f"{args.name}: characters {args.offset}-{end} of {len(text)}"
        if end < len(text):
            head += f"; read on with offset={end}"
        return ToolResult(
            content=f"[{head}]\n{body}", summary=f"Read {args.name} ({end - args.offset} characters)"
        )


class ScratchpadSaveFileArgs(ToolArgs):
    name: str = Field(description="Scratchpad entry to write out.")
    path: str = Field(description="File path, relative to the project root; created or replaced.")


class ScratchpadSaveFile(Tool):
    name = "scratchpad_save_file"
    description = "Write a scratchpad entry to a file (created or replaced; parent directories are created)."
    Args = ScratchpadSaveFileArgs
    category = "edit"

    def file_targets(self, arguments: dict[str, Any]) -> list[tuple[str, str]]:
        path = arguments.get("path")
        return [(path, "write")] if isinstance(path, str) else []  # judged as write_file's write

    async def run(self, args: ScratchpadSaveFileArgs, ctx: ToolContext) -> ToolResult:
        text = _store(ctx).get(args.name)
        if text is None:
            return _missing(ctx, args.name)
        resolved = await write_whole(ctx, args.path, text, "scratchpad_save_file")
        if isinstance(resolved, ToolResult):
            return resolved
        message = f"Wrote {args.name} to {resolved.display} ({len(text)} characters)"
        return ToolResult(content=message, summary=message, metadata={"files_changed": [resolved.rel]})


def scratchpad_tools() -> list[Tool]:
    return [ScratchpadRead(), ScratchpadSaveFile()]
