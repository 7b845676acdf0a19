"""`[tools] enabled` / `disabled` / `categories`: which tools a run registers and the category the
gate judges each by. The registry asks `ToolFilter.admit` for every tool, built-in or MCP, so a
filtered tool is never offered, never callable, and its call gets the reason instead.

A name in the lists is a tool name, a shell-style pattern (`mcp__github__*`) or a group name from
`GROUPS`; a group removes the whole subsystem (`agent` takes its lifecycle actions with it).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from mermaid_cli.core.types import ToolResult, ToolSpec
from mermaid_cli.tools.base import Tool, ToolContext

if TYPE_CHECKING:
    from mermaid_cli.config.sections.tools import ToolsSection

#: group name -> the tool-name patterns it stands for
GROUPS: dict[str, tuple[str, ...]] = {
    "files": ("read_file", "write_file", "edit_file", "apply_patch", "delete_file", "create_directory"),
    "search": ("glob", "grep"),
    "shell": ("execute_command", "background_process"),
    "web": ("web_fetch", "web_search"),
    "tasks": ("task_create", "task_update", "task_list"),
    "context": ("context_archive", "compact_context", "context_check"),
    "scratchpad": ("scratchpad_read", "scratchpad_save_file"),
    "memory": ("memory",),
    "mcp": ("mcp__*", "tool_search", "load_tool", "list_mcp_resources", "read_mcp_resource"),
    "agent": ("agent", "agent_*"),
    "computer": ("computer",),
    "images": ("render_image",),
}


def _patterns(names: list[str]) -> list[str]:
    out: list[str] = []
    for name in names:
        out.extend(GROUPS.get(name, (name,)))
    return out


def _matches(name: str, patterns: list[str]) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


class ToolFilter:
    """The `[tools]` filters of one run."""

    def __init__(self, settings: ToolsSection) -> None:
        self.enabled = None if settings.enabled is None else _patterns(settings.enabled)
        self.disabled = _patterns(settings.disabled)
        self.categories = dict(settings.categories)
        self._wrapped: dict[int, Tool] = {}

    @property
    def active(self) -> bool:
        return self.enabled is not None or bool(self.disabled) or bool(self.categories)

    def refusal(self, name: str) -> str | None:
        """Why `name` is not offered this run, or None when it may be."""
        if _matches(name, self.disabled):
            return f"the tool {name} is disabled for this run by the user's `[tools] disabled` list"
        if self.enabled is not None and not _matches(name, self.enabled):
            return f"the tool {name} is not in the user's `[tools] enabled` list for this run"
        return None

    def admit(self, tool: Tool) -> Tool | None:
        """`tool` as the run offers it (with its category replaced when configured), or None."""
        if self.refusal(tool.name) is not None:
            return None
        category = self.categories.get(tool.name)
        if category is None or category == tool.category:
            return tool
        wrapped = self._wrapped.get(id(tool))
        if wrapped is None or getattr(wrapped, "inner", None) is not tool:
            wrapped = self._wrapped[id(tool)] = Recategorized(tool, category)
        return wrapped


class Recategorized(Tool):
    """A tool the gate judges by the configured category; everything else is the tool's own."""

    def __init__(self, inner: Tool, category: str) -> None:
        self.inner = inner
        # per instance: the wrapped tool's own; the category replaces its per-call one too
        self.name = inner.name  # type: ignore[misc]
        self.description = inner.description  # type: ignore[misc]
        self.Args = inner.Args  # type: ignore[misc]
        self.category = category  # type: ignore[misc]

    def category_for(self, arguments: dict[str, Any]) -> str:
        return str(self.category)

    def spec(self) -> ToolSpec:
        return self.inner.spec()

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        result = await self.inner.run(args, ctx)
        if self.inner.category == "mcp" and not result.metadata.get("untrusted_content"):
            # a new category changes the gate's judgement, not where the text came from
            result = result.model_copy(update={"metadata": {**result.metadata, "untrusted_content": True}})
        return result

    def __getattr__(self, attr: str) -> Any:  # file_targets, sequential, read_only_hint, ...
        return getattr(self.inner, attr)
