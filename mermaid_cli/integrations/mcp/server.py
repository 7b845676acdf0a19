"""One MCP server's connection: its state, the task that owns its SDK client, and its transports.

`serve()` is the body of a server's task: it enters the client (for stdio, the child process),
reports ready, waits for the stop signal and exits the client, so the SDK's shutdown sequence
(stdin EOF, SIGTERM, SIGKILL to the process group) always runs in the task that started it.
Every failure of one server becomes data on its `ServerHandle` (state `error` and a message);
the manager decides what the run does with it.

`mcp` is imported only inside functions: it costs about a second.
"""

from __future__ import annotations

import asyncio
import math
import os
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

from mermaid_cli.config.sections.mcp import McpServerSettings

_LIST_PAGE_CAP = 50

State = Literal["starting", "ready", "error", "disabled", "closed"]
Progress = Callable[[str], None]


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
class ServerHandle:
    """A configured server while the run lasts: settings, state, the live client and its catalog."""

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

    @property
    def ready(self) -> bool:
        return self.state == "ready" and self.client is not None

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


async def serve(
    srv: ServerHandle, *, closed: Callable[[], bool], client_version: str, progress: Progress
) -> None:
    """Run one server until `srv.stop` is set or its cancel scope is cancelled; never raises for
    a failure of the server itself (only cancellation and interpreter exit propagate)."""
    import anyio

    timeout = srv.settings.startup_timeout_secs
    if closed():  # closed before this task first ran: never spawn
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
                client = await _connect(srv, stack, stderr_file, client_version)
                await _load(srv, client)
                srv.client = client
                srv.state = "ready"
                scope.deadline = math.inf
                srv.settled.set()
                progress(f"mcp: {srv.name} ready ({srv.protocol_version})")
                await srv.stop.wait()
        if srv.state == "starting":
            srv.state = "error"
            srv.error = (
                f"did not start within {timeout:g} s"
                if scope.cancelled_caught and not closed()
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


async def _connect(srv: ServerHandle, stack: AsyncExitStack, stderr_file: TextIO, client_version: str) -> Any:
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
        transport = await _http_transport(srv, stack)
    client = Client(
        transport,
        client_info=Implementation(name="mermaid", version=client_version),
        cache=None,
    )
    return await stack.enter_async_context(client)


async def _http_transport(srv: ServerHandle, stack: AsyncExitStack) -> Any:
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


async def _load(srv: ServerHandle, client: Any) -> None:
    caps = client.server_capabilities
    srv.protocol_version = client.protocol_version
    info = client.server_info
    srv.server_name = getattr(info, "name", None)
    srv.resources = caps.resources is not None
    if caps.tools is not None:
        srv.raw_tools = await list_all(client.list_tools, "tools")
    if caps.prompts is not None:
        srv.prompts = await list_all(client.list_prompts, "prompts")


async def list_all(method: Callable[..., Awaitable[Any]], attr: str) -> list[Any]:
    """Every item of a paginated MCP list call (at most `_LIST_PAGE_CAP` pages)."""
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


def _describe(exc: BaseException, srv: ServerHandle, stderr_file: TextIO) -> str:
    if srv.auth is not None and getattr(srv.auth, "login_hint", None):
        return str(srv.auth.login_hint)
    message = leaf_message(exc)
    if isinstance(exc, asyncio.CancelledError):
        message = "cancelled while starting"
    tail = _stderr_tail(stderr_file)
    if tail:
        message = f"{message}; server stderr: {tail}"
    return message


def _stderr_tail(stderr_file: TextIO, limit: int = 500) -> str:
    try:
        stderr_file.flush()
        stderr_file.seek(0)
        text = stderr_file.read()
    except (OSError, ValueError):
        return ""
    text = " ".join(text.split())
    return text[-limit:]
