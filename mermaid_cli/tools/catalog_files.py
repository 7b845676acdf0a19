"""The file, edit and search tools, for the registry (`ToolRegistry(file_tools())`)."""

from __future__ import annotations

from mermaid_cli.tools.apply_patch import ApplyPatch
from mermaid_cli.tools.base import Tool
from mermaid_cli.tools.edit import EditFile
from mermaid_cli.tools.files import CreateDirectory, DeleteFile, ReadFile, WriteFile
from mermaid_cli.tools.search import Glob, Grep

FILE_TOOLS: list[type[Tool]] = [
    ReadFile,
    WriteFile,
    EditFile,
    ApplyPatch,
    DeleteFile,
    CreateDirectory,
    Glob,
    Grep,
]


def file_tools() -> list[Tool]:
    return [cls() for cls in FILE_TOOLS]
