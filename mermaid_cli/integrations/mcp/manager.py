"""Runs the configured MCP servers for one Mermaid run: `McpManager`, the one object the runner,
`doctor`, the prompt fetcher and the MCP tools talk to.

The manager owns the lifecycle (start every server concurrently, bounded per server by its
startup deadline; shut them all down however the run ends) and routes calls to ready servers.
A server that fails or times out is reported and the run goes on without it. The parts live next
to it: `server` (one server's task, transports and errors), `catalog` (which tools are
advertised, deferred tools), `resources` (resource listing and reads).

`mcp` is imported only inside functions: it costs about a second.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from mermaid_cli.config.sections.mcp import McpServerSettings
from mermaid_cli.core.types import ToolResult
from mermaid_cli.integrations.mcp import resources
from mermaid_cli.integrations.mcp.catalog import ToolCatalog
from mermaid_cli.integrations.mcp.server import (
    Progress,
    ServerHandle,
    ServerStatus,
    State,
    leaf_message,
    serve,
)
from mermaid_cli.integrations.mcp.tools import McpToolAdapter, call_result_to_tool_result
from mermaid_cli.tools.base import Tool

__all__ = [
    "SHUTDOWN_GRACE_SECS",
    "TOOL_CALL_TIMEOUT_SECS",
    "McpManager",
    "ServerStatus",
    "State",
    "leaf_message",
]

TOOL_CALL_TIMEOUT_SECS = 300.0
# How long aclose() lets servers wind down before cancelling them (the SDK's own stdio
# escalation is bounded at ~6.5 s: 2 s after stdin EOF, 2 s after SIGTERM, then SIGKILL).
SHUTDOWN_GRACE_SECS = 10.0


class McpManager:
    """All MCP servers of a run. Use `await start()` then `current_tools()` each turn, `lookup(name)`
    for any tool (deferred ones included), and `await aclose()` when the run ends, however it ends.
    Also an async context manager."""

    def __init__(
        self,
        servers: Mapping[str, McpServerSettings],
        *,
        defer_tools: bool = True,
        tool_timeout_secs: float = TOOL_CALL_TIMEOUT_SECS,
        client_version: str = "0",
        progress: Progress | None = None,
    ) -> None:
        self._servers = {name: ServerHandle(name, cfg) for name, cfg in servers.items()}
        self._defer_default = defer_tools
        self._tool_timeout = tool_timeout_secs
        self._client_version = client_version
        self._progress: Progress = progress or (lambda _line: None)
        self._catalog = ToolCatalog(
            self, ready=lambda name: self._ready(name) is not None, has_resources=self._has_resources
        )
        self._started = False
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> McpManager:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> list[ServerStatus]:
        """Start every enabled server concurrently; return once each is ready or has failed."""
        if self._started:
            return self.statuses()
        self._started = True
        for srv in self._servers.values():
            if not srv.settings.enabled:
                srv.state = "disabled"
                srv.settled.set()
                srv.done.set()
                continue
            srv.task = asyncio.create_task(self._serve(srv), name=f"mcp:{srv.name}")
        await asyncio.gather(*(self._await_start(srv) for srv in self._servers.values()))
        self._catalog.build(self._servers.values(), self._defer_default)
        return self.statuses()

    async def _serve(self, srv: ServerHandle) -> None:
        await serve(
            srv, closed=lambda: self._closed, client_version=self._client_version, progress=self._progress
        )

    async def _await_start(self, srv: ServerHandle) -> None:
        """Wait for one server to settle; at its deadline, report it failed at once and let its
        task wind the process down in the background (aclose() waits for that)."""
        try:
            await asyncio.wait_for(srv.settled.wait(), srv.settings.startup_timeout_secs)
        except TimeoutError:
            if srv.state == "starting":
                srv.state = "error"
                srv.error = f"did not start within {srv.settings.startup_timeout_secs:g} s"
                if srv.scope is not None:
                    srv.scope.cancel()
            srv.settled.set()

    async def aclose(self) -> None:
        """Shut every server down (idempotent). Returns when their processes are gone."""
        if self._closed:
            return
        self._closed = True
        for srv in self._servers.values():
            # a ready server exits its client in its own task; one still starting is cancelled
            if srv.state != "ready" and srv.scope is not None:
                srv.scope.cancel()
            else:
                srv.stop.set()
        tasks = [srv.task for srv in self._servers.values() if srv.task is not None]
        if not tasks:
            return
        _done, pending = await asyncio.wait(tasks, timeout=SHUTDOWN_GRACE_SECS)
        if pending:
            for srv in self._servers.values():
                if srv.task in pending and srv.scope is not None:
                    srv.scope.cancel()
            await asyncio.wait(pending, timeout=SHUTDOWN_GRACE_SECS)

    # -- tools -----------------------------------------------------------------------------

    def _ready(self, server: str) -> ServerHandle | None:
        srv = self._servers.get(server)
        return srv if srv is not None and srv.ready else None

    def _resource_servers(self) -> list[ServerHandle]:
        return [s for s in self._servers.values() if s.resources and s.ready]

    def _has_resources(self) -> bool:
        return bool(self._resource_servers())

    def current_tools(self) -> list[Tool]:
        """The tools to advertise this turn (see `ToolCatalog.current_tools`)."""
        return self._catalog.current_tools()

    def all_tools(self) -> list[Tool]:
        """Every tool of the ready servers, deferred ones included (`ToolCatalog.all_tools`)."""
        return self._catalog.all_tools()

    def lookup(self, name: str) -> Tool | None:
        """Any MCP tool by its full name, deferred ones included (a direct call still works)."""
        return self._catalog.lookup(name)

    @property
    def promoted(self) -> frozenset[str]:
        return self._catalog.promoted

    def search_deferred(self, query: str, limit: int) -> list[McpToolAdapter]:
        return self._catalog.search_deferred(query, limit)

    async def call_tool(self, server: str, raw_name: str, arguments: dict[str, Any]) -> ToolResult:
        import anyio

        srv = self._ready(server)
        if srv is None:
            return ToolResult.error(f"MCP server {server!r} is not available")
        try:
            with anyio.fail_after(self._tool_timeout):
                result = await srv.client.call_tool(raw_name, arguments)
        except TimeoutError:
            return ToolResult.error(f"MCP tool {server}/{raw_name} timed out after {self._tool_timeout:g} s")
        except Exception as exc:  # noqa: BLE001 - a failed call is data for the model
            self._note_connection_lost(srv, exc)
            # a 403 insufficient_scope reaches us as the transport's generic error; the sign-in
            # provider knows the scopes asked for and the command to run
            refusal = srv.auth.step_up_refusal if srv.auth is not None else None
            if refusal:
                srv.auth.step_up_refusal = None
                return ToolResult.error(f"MCP tool {server}/{raw_name} failed: {refusal}")
            return ToolResult.error(f"MCP tool {server}/{raw_name} failed: {leaf_message(exc)}")
        return _scrub(srv, call_result_to_tool_result(result, f"{server}/{raw_name}"))

    def _note_connection_lost(self, srv: ServerHandle, exc: BaseException) -> None:
        """A server whose connection closed (a crashed stdio child) leaves the tool list."""
        if getattr(exc, "code", None) == -32000 and "connection closed" in str(exc).lower():
            srv.state = "error"
            srv.error = "connection to the server was lost"
            self._progress(f"mcp: {srv.name} connection lost")

    # -- resources -------------------------------------------------------------------------

    async def list_resources_text(self, server: str | None) -> ToolResult:
        return await resources.list_resources_text(self._resource_servers(), server, self._tool_timeout)

    async def read_resource(self, server: str, uri: str) -> ToolResult:
        srv = self._ready(server)
        if srv is None or not srv.resources:
            return resources.not_available(server, self._resource_servers())
        return _scrub(srv, await resources.read_resource(srv, uri, self._tool_timeout))

    # -- prompts and status ----------------------------------------------------------------

    def prompts(self, server: str) -> list[Any] | None:
        srv = self._ready(server)
        return None if srv is None else list(srv.prompts)

    async def get_prompt(self, server: str, prompt: str, arguments: dict[str, str]) -> Any:
        import anyio

        srv = self._ready(server)
        if srv is None:
            raise LookupError(f"MCP server {server!r} is not available")
        with anyio.fail_after(self._tool_timeout):
            return await srv.client.get_prompt(prompt, arguments)

    def statuses(self) -> list[ServerStatus]:
        return [srv.status() for srv in self._servers.values()]

    def errors(self) -> list[tuple[str, str]]:
        """(server, message) per failed server: one `error` event each."""
        return [(s.name, s.error or "failed") for s in self._servers.values() if s.state == "error"]


def _scrub(srv: ServerHandle, result: ToolResult) -> ToolResult:
    """A server that echoes our OAuth tokens back (by bug or on purpose) must not put them in the
    transcript: they are not in the environment, so the run's redactor does not know them."""
    secrets = srv.auth.secrets() if srv.auth is not None else []
    if not any(s in result.content or s in result.summary for s in secrets):
        return result
    from mermaid_cli.security.redact import Redactor

    redact = Redactor(secrets, shapes=False).redact
    return result.model_copy(update={"content": redact(result.content), "summary": redact(result.summary)})
