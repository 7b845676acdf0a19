"""The MCP tool catalog of a run: server tools as Mermaid tools, which of them are advertised
each turn, deferred tools and their promotion through `tool_search` or `load_tool`, and the
resource tools.

The catalog holds no connection: it asks `ready(server)` whether a server can take calls now, so
a server that fails mid-run leaves the tool list on the next turn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from mermaid_cli.integrations.mcp.deferred import DeferredCallNotes, LoadTool
from mermaid_cli.integrations.mcp.server import ServerHandle
from mermaid_cli.integrations.mcp.tools import (
    ListMcpResources,
    McpBackend,
    McpToolAdapter,
    ReadMcpResource,
    ToolSearch,
    score,
    tool_name,
)
from mermaid_cli.tools.base import Tool


class ToolCatalog:
    """Adapters by full name (`mcp__server__tool`), the promoted deferred ones, and the built-in
    `tool_search` / resource tools, all calling back into `backend`."""

    def __init__(
        self, backend: McpBackend, *, ready: Callable[[str], bool], has_resources: Callable[[], bool]
    ) -> None:
        self._ready = ready
        self._has_resources = has_resources
        self._adapters: dict[str, McpToolAdapter] = {}
        self._promoted: set[str] = set()
        self._tool_search = ToolSearch(backend)
        self._load_tool = LoadTool(self)
        self._notes = DeferredCallNotes(self._promoted)
        self._list_resources = ListMcpResources(backend)
        self._read_resource = ReadMcpResource(backend)
        self._backend = backend

    def build(self, servers: Iterable[ServerHandle], defer_default: bool) -> None:
        """One adapter per allowed tool of each ready server; names made unique across servers."""
        taken: set[str] = set()
        for srv in servers:
            if srv.state != "ready":
                continue
            deferred_server = srv.settings.defer if srv.settings.defer is not None else defer_default
            for raw in srv.raw_tools:
                # `eager_load_tools`: their schemas ship from the first turn
                deferred = deferred_server and raw.name not in srv.settings.eager_load_tools
                if not srv.settings.tool_allowed(raw.name):
                    continue
                name = tool_name(srv.name, raw.name, taken)
                taken.add(name)
                annotations = getattr(raw, "annotations", None)
                self._adapters[name] = McpToolAdapter(
                    self._backend,
                    srv.name,
                    raw.name,
                    name,
                    raw.description or "",
                    raw.input_schema,
                    read_only_hint=bool(getattr(annotations, "read_only_hint", False)),
                    deferred=deferred,
                )
                self._adapters[name].after_call = self._notes.after_call

    def current_tools(self) -> list[Tool]:
        """The tools to advertise this turn: direct tools, promoted deferred tools, `tool_search`
        while deferred tools exist, and the resource tools while a resources-capable server is ready."""
        tools: list[Tool] = []
        has_deferred = False
        for adapter in self._adapters.values():
            if not self._ready(adapter.server):
                continue
            if adapter.deferred and adapter.name not in self._promoted:
                has_deferred = True
                continue
            tools.append(adapter)
        if has_deferred:
            tools.extend([self._tool_search, self._load_tool])
        if self._has_resources():
            tools.extend([self._list_resources, self._read_resource])
        return tools

    def all_tools(self) -> list[Tool]:
        """Every tool of every ready server, deferred or not, and the meta-tools they make
        available (`mermaid tools list`)."""
        tools: list[Tool] = [a for a in self._adapters.values() if self._ready(a.server)]
        if any(a.deferred for a in tools if isinstance(a, McpToolAdapter)):
            tools.extend([self._tool_search, self._load_tool])
        if self._has_resources():
            tools.extend([self._list_resources, self._read_resource])
        return tools

    def lookup(self, name: str) -> Tool | None:
        """Any MCP tool by its full name, deferred ones included (a direct call still works)."""
        if name in self._adapters:
            return self._adapters[name]
        if name in (ToolSearch.name, LoadTool.name) and any(a.deferred for a in self._adapters.values()):
            return self._tool_search if name == ToolSearch.name else self._load_tool
        if name in (ListMcpResources.name, ReadMcpResource.name) and self._has_resources():
            return self._list_resources if name == ListMcpResources.name else self._read_resource
        return None

    @property
    def promoted(self) -> frozenset[str]:
        return frozenset(self._promoted)

    def load_deferred(self, names: list[str]) -> tuple[list[McpToolAdapter], list[str]]:
        """(the tools named, now offered from the next turn on; the names that are no tool)."""
        found = [
            self._adapters[n] for n in names if n in self._adapters and self._ready(self._adapters[n].server)
        ]
        self._promoted.update(a.name for a in found if a.deferred)
        return found, [n for n in names if n not in {a.name for a in found}]

    def search_deferred(self, query: str, limit: int) -> list[McpToolAdapter]:
        """The best-scoring deferred tools for `query`; found tools are advertised from now on."""
        candidates = [a for a in self._adapters.values() if a.deferred and self._ready(a.server)]
        ranked = sorted(
            ((score(query, a), i, a) for i, a in enumerate(candidates)), key=lambda t: (-t[0], t[1])
        )
        found = [a for s, _i, a in ranked if s > 0][:limit]
        self._promoted.update(a.name for a in found)
        return found
