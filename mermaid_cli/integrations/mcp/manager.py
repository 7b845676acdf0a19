"""Runs the configured MCP servers for one Mermaid run.

Each server lives in its own task that owns the SDK client (and with it, for stdio, the child
process): the task enters the client, reports ready, waits for the stop signal and exits the
client, so the SDK's shutdown sequence (stdin EOF, SIGTERM, SIGKILL to the process group) always
runs in the task that started it. Startup is bounded per server by a deadline on that task's
cancel scope; a server that fails or times out is reported and the run goes on without it.

`mcp` is imported only inside functions: it costs about a second.
"""

from __future__ import annotations

import asyncio
import math
import os
import tempfile
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Literal

from mermaid_cli.config.sections.mcp import McpServerSettings
from mermaid_cli.core.types import ToolResult
from mermaid_cli.integrations.mcp.tools import (
    ListMcpResources,
    McpToolAdapter,
    ReadMcpResource,
    ToolSearch,
    call_result_to_tool_result,
    cap_resource_text,
    convert_resource_contents,
    score,
    tool_name,
)
from mermaid_cli.tools.base import Tool

TOOL_CALL_TIMEOUT_SECS = 300.0
# How long aclose() lets servers wind down before cancelling them (the SDK's own stdio
# escalation is bounded at ~6.5 s: 2 s after stdin EOF, 2 s after SIGTERM, then SIGKILL).
SHUTDOWN_GRACE_SECS = 10.0
_LIST_PAGE_CAP = 50

State = Literal["starting", "ready", "error", "disabled", "closed"]


@dataclass
class ServerStatus:
    """What `start()` reports per server (the lead emits an `error` event per `state == "error"`)."""

    name: str
    state: State
    transport: str
    error: str | None = None
    protocol_version: str | None = None
    server_name: str | None = None
    tools: int = 0
    prompts: int = 0
    resources: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.state,
            "transport": self.transport,
            "error": self.error,
            "protocol_version": self.protocol_version,
            "server_name": self.server_name,
            "tools": self.tools,
            "prompts": self.prompts,
            "resources": self.resources,
        }


@dataclass
class _Server:
    name: str
    settings: McpServerSettings
    state: State = "starting"
    error: str | None = None
    client: Any = None
    protocol_version: str | None = None
    server_name: str | None = None
    raw_tools: list[Any] = field(default_factory=list)
    prompts: list[Any] = field(default_factory=list)
    resources: bool = False
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    scope: Any = None
    task: asyncio.Task[None] | None = None
    auth: Any = None

    def status(self) -> ServerStatus:
        return ServerStatus(
            name=self.name,
            state=self.state,
            transport=self.settings.transport,
            error=self.error,
            protocol_version=self.protocol_version,
            server_name=self.server_name,
            tools=len(self.raw_tools),
            prompts=len(self.prompts),
            resources=self.resources,
        )


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
        progress: Any = None,
    ) -> None:
        self._servers = {name: _Server(name, cfg) for name, cfg in servers.items()}
        self._defer_default = defer_tools
        self._tool_timeout = tool_timeout_secs
        self._client_version = client_version
        self._progress = progress or (lambda _line: None)
        self._adapters: dict[str, McpToolAdapter] = {}
        self._promoted: set[str] = set()
        self._tool_search = ToolSearch(self)
        self._list_resources = ListMcpResources(self)
        self._read_resource = ReadMcpResource(self)
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
        self._build_adapters()
        return self.statuses()

    async def _await_start(self, srv: _Server) -> None:
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
            if srv.state == "ready":
                srv.stop.set()
            elif srv.scope is not None:
                srv.scope.cancel()
            else:
                srv.stop.set()
        tasks = [srv.task for srv in self._servers.values() if srv.task is not None]
        if not tasks:
            return
        done, pending = await asyncio.wait(tasks, timeout=SHUTDOWN_GRACE_SECS)
        if pending:
            for srv in self._servers.values():
                if srv.task in pending and srv.scope is not None:
                    srv.scope.cancel()
            await asyncio.wait(pending, timeout=SHUTDOWN_GRACE_SECS)

    async def _serve(self, srv: _Server) -> None:
        import anyio

        timeout = srv.settings.startup_timeout_secs
        if self._closed:  # closed before this task first ran: never spawn
            srv.state, srv.error = "error", "shut down while starting"
            srv.settled.set()
            srv.done.set()
            return
        stderr_file = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        try:
            with anyio.CancelScope() as scope:
                srv.scope = scope
                # backstop; start() normally gives up at the same moment and cancels this scope
                scope.deadline = anyio.current_time() + timeout + 1
                async with AsyncExitStack() as stack:
                    client = await self._connect(srv, stack, stderr_file)
                    await self._load(srv, client)
                    srv.client = client
                    srv.state = "ready"
                    scope.deadline = math.inf
                    srv.settled.set()
                    self._progress(f"mcp: {srv.name} ready ({srv.protocol_version})")
                    await _wait_event(srv.stop)
            if srv.state == "starting":
                srv.state = "error"
                srv.error = (
                    f"did not start within {timeout:g} s"
                    if scope.cancelled_caught and not self._closed
                    else "shut down while starting"
                )
        except BaseException as exc:  # noqa: BLE001 - every failure of one server is data
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            if srv.state == "starting" or srv.state == "ready":
                srv.error = _describe(exc, srv, stderr_file)
                srv.state = "error"
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            srv.client = None
            if srv.state in ("ready", "starting"):
                srv.state = "closed" if srv.state == "ready" else "error"
            srv.settled.set()
            srv.done.set()
            stderr_file.close()

    async def _connect(self, srv: _Server, stack: AsyncExitStack, stderr_file: Any) -> Any:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp_types import Implementation

        cfg = srv.settings
        if cfg.command is not None:
            params = StdioServerParameters(
                command=os.path.expanduser(cfg.command),
                args=list(cfg.args),
                env=dict(cfg.env) or None,
                cwd=os.path.expanduser(cfg.cwd) if cfg.cwd else None,
            )
            transport: Any = stdio_client(params, errlog=stderr_file)
        else:
            transport = await self._http_transport(srv, stack)
        client = Client(
            transport,
            client_info=Implementation(name="mermaid", version=self._client_version),
            cache=None,
        )
        return await stack.enter_async_context(client)

    async def _http_transport(self, srv: _Server, stack: AsyncExitStack) -> Any:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        cfg = srv.settings
        assert cfg.url is not None
        auth = None
        if not cfg.sends_own_authorization():
            from mermaid_cli.integrations.mcp.oauth import runtime_auth

            auth = runtime_auth(srv.name, cfg)
            srv.auth = auth
        http = create_mcp_http_client(headers=dict(cfg.headers) or None, auth=auth)
        if cfg.env_headers:
            env_headers = dict(cfg.env_headers)

            async def add_env_headers(request: httpx2.Request) -> None:
                # read at request time, so a rotated token in the environment is picked up
                for header, var in env_headers.items():
                    value = os.environ.get(var)
                    if value:
                        request.headers[header] = value

            http.event_hooks["request"].append(add_env_headers)
        await stack.enter_async_context(http)
        return streamable_http_client(cfg.url, http_client=http)

    async def _load(self, srv: _Server, client: Any) -> None:
        caps = client.server_capabilities
        srv.protocol_version = client.protocol_version
        info = client.server_info
        srv.server_name = getattr(info, "name", None)
        srv.resources = caps.resources is not None
        if caps.tools is not None:
            srv.raw_tools = await _list_all(client.list_tools, "tools")
        if caps.prompts is not None:
            srv.prompts = await _list_all(client.list_prompts, "prompts")

    # -- tools -----------------------------------------------------------------------------

    def _build_adapters(self) -> None:
        taken: set[str] = set()
        for srv in self._servers.values():
            if srv.state != "ready":
                continue
            deferred = srv.settings.defer if srv.settings.defer is not None else self._defer_default
            for raw in srv.raw_tools:
                if not srv.settings.tool_allowed(raw.name):
                    continue
                name = tool_name(srv.name, raw.name, taken)
                taken.add(name)
                annotations = getattr(raw, "annotations", None)
                self._adapters[name] = McpToolAdapter(
                    self,
                    srv.name,
                    raw.name,
                    name,
                    raw.description or "",
                    raw.input_schema,
                    read_only_hint=bool(getattr(annotations, "read_only_hint", False)),
                    deferred=deferred,
                )

    def _ready(self, server: str) -> _Server | None:
        srv = self._servers.get(server)
        return srv if srv is not None and srv.state == "ready" and srv.client is not None else None

    def _resource_servers(self) -> list[_Server]:
        return [s for s in self._servers.values() if s.resources and self._ready(s.name)]

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
            tools.append(self._tool_search)
        if self._resource_servers():
            tools.extend([self._list_resources, self._read_resource])
        return tools

    def lookup(self, name: str) -> Tool | None:
        """Any MCP tool by its full name, deferred ones included (a direct call still works)."""
        if name in self._adapters:
            return self._adapters[name]
        if name == ToolSearch.name and any(a.deferred for a in self._adapters.values()):
            return self._tool_search
        if name in (ListMcpResources.name, ReadMcpResource.name) and self._resource_servers():
            return self._list_resources if name == ListMcpResources.name else self._read_resource
        return None

    @property
    def promoted(self) -> frozenset[str]:
        return frozenset(self._promoted)

    def deferred_tools(self) -> list[McpToolAdapter]:
        return [a for a in self._adapters.values() if a.deferred and a.name not in self._promoted]

    def search_deferred(self, query: str, limit: int) -> list[McpToolAdapter]:
        candidates = [a for a in self._adapters.values() if a.deferred and self._ready(a.server)]
        ranked = sorted(
            ((score(query, a), i, a) for i, a in enumerate(candidates)), key=lambda t: (-t[0], t[1])
        )
        found = [a for s, _i, a in ranked if s > 0][:limit]
        self._promoted.update(a.name for a in found)
        return found

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
            return ToolResult.error(f"MCP tool {server}/{raw_name} failed: {leaf_message(exc)}")
        return call_result_to_tool_result(result, f"{server}/{raw_name}")

    def _note_connection_lost(self, srv: _Server, exc: BaseException) -> None:
        """A server whose connection closed (a crashed stdio child) leaves the tool list."""
        if getattr(exc, "code", None) == -32000 and "connection closed" in str(exc).lower():
            srv.state = "error"
            srv.error = "connection to the server was lost"
            self._progress(f"mcp: {srv.name} connection lost")

    # -- resources -------------------------------------------------------------------------

    async def list_resources_text(self, server: str | None) -> ToolResult:
        import anyio

        servers = self._resource_servers()
        if server is not None:
            servers = [s for s in servers if s.name == server]
            if not servers:
                names = ", ".join(s.name for s in self._resource_servers()) or "none"
                return ToolResult.error(f"no ready MCP server {server!r} with resources; available: {names}")
        lines: list[str] = []
        count = 0
        for srv in servers:
            try:
                with anyio.fail_after(self._tool_timeout):
                    resources = await _list_all(srv.client.list_resources, "resources")
                    try:
                        templates = await _list_all(srv.client.list_resource_templates, "resource_templates")
                    except Exception:  # noqa: BLE001 - templates are optional
                        templates = []
            except Exception as exc:  # noqa: BLE001
                lines.append(f"[{srv.name}] error: {leaf_message(exc)}")
                continue
            for r in resources:
                count += 1
                bits = [f"server={srv.name}", f"uri={r.uri}", f"name={r.name}"]
                if r.mime_type:
                    bits.append(f"mime={r.mime_type}")
                if r.description:
                    bits.append(f"description={r.description}")
                lines.append(" | ".join(bits))
            for t in templates:
                lines.append(f"server={srv.name} | template={t.uri_template} | name={t.name}")
        text = "\n".join(lines) if lines else "No resources."
        return ToolResult(content=cap_resource_text(text), summary=f"{count} resource(s)")

    async def read_resource(self, server: str, uri: str) -> ToolResult:
        import anyio

        srv = self._ready(server)
        if srv is None or not srv.resources:
            names = ", ".join(s.name for s in self._resource_servers()) or "none"
            return ToolResult.error(f"no ready MCP server {server!r} with resources; available: {names}")
        try:
            with anyio.fail_after(self._tool_timeout):
                result = await srv.client.read_resource(uri)
        except TimeoutError:
            return ToolResult.error(f"reading {uri} from {server} timed out after {self._tool_timeout:g} s")
        except Exception as exc:  # noqa: BLE001
            return ToolResult.error(f"reading {uri} from {server} failed: {leaf_message(exc)}")
        texts, images = convert_resource_contents(list(result.contents))
        content = cap_resource_text("\n".join(texts)) if texts else "(empty resource)"
        return ToolResult(content=content, summary=f"Read {uri} from {server}", images=tuple(images))

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


async def _wait_event(event: asyncio.Event) -> None:
    await event.wait()


async def _list_all(method: Any, attr: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(_LIST_PAGE_CAP):
        page = await method(cursor=cursor)
        items.extend(getattr(page, attr))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def leaf_message(exc: BaseException) -> str:
    """The innermost meaningful message of an exception (groups unwrapped)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    cause = exc
    # an OAuth sign-in failure is often wrapped by the transport
    while cause.__cause__ is not None and not str(cause):
        cause = cause.__cause__
    text = str(cause) or type(cause).__name__
    return text


def _describe(exc: BaseException, srv: _Server, stderr_file: Any) -> str:
    if srv.auth is not None and getattr(srv.auth, "login_hint", None):
        return srv.auth.login_hint
    message = leaf_message(exc)
    if isinstance(exc, asyncio.CancelledError):
        message = "cancelled while starting"
    tail = _stderr_tail(stderr_file)
    if tail:
        message = f"{message}; server stderr: {tail}"
    return message


def _stderr_tail(stderr_file: Any, limit: int = 500) -> str:
    try:
        stderr_file.flush()
        stderr_file.seek(0)
        text = stderr_file.read()
    except (OSError, ValueError):
        return ""
    text = " ".join(text.split())
    return text[-limit:]
