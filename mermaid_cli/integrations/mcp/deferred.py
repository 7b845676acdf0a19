"""Deferred MCP tools the meka way, beside `tool_search`: `load_tool` loads one named tool or up
to ten, and a deferred tool called without being loaded still runs but, once per tool per run,
its result names the documented parameters the call did not pass (types, defaults,
descriptions), since the model never saw them. A server's `eager_load_tools` are not deferred."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import Field, field_validator

from mermaid_cli.core.types import ToolResult
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext

if TYPE_CHECKING:
    from mermaid_cli.integrations.mcp.tools import McpToolAdapter

MAX_LOAD = 10


class LoadBackend(Protocol):
    def load_deferred(self, names: list[str]) -> tuple[list[McpToolAdapter], list[str]]: ...


class LoadToolArgs(ToolArgs):
    name: str | list[str] = Field(
        description=f"Full tool name(s), e.g. mcp__notion__search; up to {MAX_LOAD}."
    )

    @field_validator("name")
    @classmethod
    def _at_most_ten(cls, value: str | list[str]) -> str | list[str]:
        names = [value] if isinstance(value, str) else value
        if not names or len(names) > MAX_LOAD:
            raise ValueError(f"give 1-{MAX_LOAD} tool names")
        return value


class LoadTool(Tool):
    name = "load_tool"
    description = (
        "Load deferred MCP tools by exact name (one or a list of up to 10): their full schemas are "
        "offered from the next step on."
    )
    Args = LoadToolArgs
    category = "session"  # changes what is offered; no server is contacted
    read_only_hint: ClassVar[bool] = True

    def __init__(self, backend: LoadBackend) -> None:
        self.backend = backend

    async def run(self, args: LoadToolArgs, ctx: ToolContext) -> ToolResult:
        names = [args.name] if isinstance(args.name, str) else list(dict.fromkeys(args.name))
        loaded, unknown = self.backend.load_deferred(names)
        lines = []
        if loaded:
            lines.append(f"Loaded {len(loaded)} tool(s); their schemas are offered from the next step:")
            lines += [f"- {t.name}: {t.description.splitlines()[0] if t.description else ''}" for t in loaded]
        if unknown:
            lines.append(f"No MCP tool named: {', '.join(unknown)} (tool_search finds tools by words).")
        result = "\n".join(lines)
        summary = f"loaded {len(loaded)} tool(s)" + (f", {len(unknown)} unknown" if unknown else "")
        if not loaded:
            return ToolResult.error(result)
        return ToolResult(content=result, summary=summary, metadata={"promoted": [t.name for t in loaded]})


def _type_of(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind is None and "anyOf" in schema:
        return " | ".join(_type_of(s) for s in schema["anyOf"] if isinstance(s, dict))
    return str(kind or "any")


def unpassed_parameters(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """`name (type, default X): description` for each documented parameter the call left out."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return []
    out = []
    for name, prop in properties.items():
        if name in arguments or not isinstance(prop, dict):
            continue
        facts = [_type_of(prop)]
        if "default" in prop:
            facts.append(f"default {json.dumps(prop['default'])}")
        line = f"{name} ({', '.join(facts)})"
        if prop.get("description"):
            line += f": {' '.join(str(prop['description']).split())[:200]}"
        out.append(line)
    return out


class DeferredCallNotes:
    """Which deferred tools were already told about their unpassed parameters this run."""

    def __init__(self, loaded: frozenset[str] | set[str]) -> None:
        self._loaded = loaded  # the catalog's promoted set, read live
        self._noted: set[str] = set()

    def after_call(self, tool: McpToolAdapter, arguments: dict[str, Any], result: ToolResult) -> ToolResult:
        if not tool.deferred or tool.name in self._loaded or tool.name in self._noted:
            return result
        missing = unpassed_parameters(tool.input_schema, arguments)
        if not missing:
            return result
        self._noted.add(tool.name)
        note = (
            f"\n\n[note] {tool.name} was called without loading its schema (load_tool), so these documented "
            "parameters were not seen and not passed: " + "; ".join(missing)
        )
        return result.model_copy(update={"content": result.content + note})
