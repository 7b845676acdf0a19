"""edit_file: replace one located piece of a file (or every occurrence with allow_multiple).

A file that is not UTF-8 is decoded with `surrogateescape`, so its other bytes are written back
unchanged; only text that is valid UTF-8 can be matched.
"""

from typing import Any

from pydantic import Field

from mermaid_cli.core.types import ToolResult
from mermaid_cli.tools import fileio
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext
from mermaid_cli.tools.files import checkpoint, path_error
from mermaid_cli.tools.matching import TextMatch, find_text, replace_spans
from mermaid_cli.tools.paths import PathRefused, resolve_for_tool

FUZZY_NOTE = "note: matched with fuzzy (whitespace/Unicode) context; verify the result."
LEVEL_WORDS = {
    "trailing_whitespace": "ignoring trailing whitespace",
    "trim": "ignoring leading and trailing whitespace",
    "unicode": "after Unicode normalisation",
}


class EditFileArgs(ToolArgs):
    path: str = Field(description="File path, relative to the project root.")
    target_content: str = Field(description="Exact text to replace; must occur once.")
    replacement_content: str = Field(description="Text to put in its place.")
    allow_multiple: bool = Field(default=False, description="Replace every occurrence.")


def line_ending(content: str) -> str | None:
    """The file's line ending when it has exactly one kind ("\r\n" or "\n"); None when it has no
    line breaks or mixes both."""
    crlf = content.count("\r\n")
    bare_lf = content.count("\n") - crlf
    if crlf and not bare_lf:
        return "\r\n"
    if bare_lf and not crlf:
        return "\n"
    return None


def with_ending(text: str, ending: str | None) -> str:
    """`text` with every line break written as `ending` (unchanged when `ending` is None)."""
    if ending is None:
        return text
    lf = text.replace("\r\n", "\n")
    return lf if ending == "\n" else lf.replace("\n", "\r\n")


def locate(content: str, target: str, replacement: str) -> tuple[TextMatch, str]:
    """The match and the replacement to splice in. The file's own line ending wins: a target or
    replacement written with the other ending is adapted to it (a mixed file is matched as is)."""
    ending = line_ending(content)
    adapted = with_ending(target, ending)
    if adapted != target:
        found = find_text(content, adapted)
        if found.spans and not found.fuzzy:
            return found, with_ending(replacement, ending)
    return find_text(content, target), with_ending(replacement, ending)


class EditFile(Tool):
    name = "edit_file"
    description = (
        "Replace target_content with replacement_content in a file. target_content must match "
        "exactly one location unless allow_multiple; include enough context to make it unique."
    )
    Args = EditFileArgs
    category = "edit"

    def file_targets(self, arguments: dict[str, Any]) -> list[tuple[str, str]]:
        """(path as spelled, operation) for the gate, which resolves and judges it."""
        path = arguments.get("path")
        return [(path, "modify")] if isinstance(path, str) else []

    async def run(self, args: EditFileArgs, ctx: ToolContext) -> ToolResult:
        if args.target_content == "":
            return ToolResult.error("target_content is empty; use write_file to create a file")
        if args.target_content == args.replacement_content:
            return ToolResult.error("target_content and replacement_content are identical; nothing to do")
        try:
            resolved = await resolve_for_tool(ctx, args.path, "modify")
            data = fileio.read_bytes(resolved, max_bytes=fileio.MAX_EDIT_BYTES)
            if data is None:
                return ToolResult.error(f"{args.path} does not exist; use write_file to create it")
            content, utf8 = fileio.decode(data)
            found, replacement = locate(content, args.target_content, args.replacement_content)
            count = len(found.spans)
            if count == 0:
                hint = "" if utf8 else " (the file is not valid UTF-8; only its UTF-8 text can be matched)"
                return ToolResult.error(
                    f"target_content not found in {resolved.display} (0 matches){hint}; "
                    "read the file and copy the text exactly",
                    matches=0,
                )
            if count > 1 and not args.allow_multiple:
                shown = f"{count}+" if count >= 1000 else str(count)
                return ToolResult.error(
                    f"target_content matches {shown} locations in {resolved.display}; add surrounding "
                    "context to make it unique, or set allow_multiple",
                    matches=count,
                )
            new = replace_spans(content, found.spans, replacement)
            checkpoint(ctx, [resolved], "edit_file")
            fileio.write_bytes(resolved, fileio.encode(new))
        except (PathRefused, OSError, fileio.FileTooLarge) as exc:
            return path_error(args.path, exc)
        where = "1 location" if count == 1 else f"{count} locations"
        message = f"Edited {resolved.display} ({where})"
        metadata: dict[str, object] = {"files_changed": [resolved.rel], "matches": count}
        text = message
        if found.fuzzy:
            text += f"\n{FUZZY_NOTE} (matched {LEVEL_WORDS[found.level]})"
            metadata["fuzzy"] = True
            metadata["match_level"] = found.level
        return ToolResult(content=text, summary=message, metadata=metadata)
