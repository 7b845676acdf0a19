"""Shared bits of the test MCP servers: version pinning middleware and the run entry.

The SDK's servers speak both eras by default (`server/discover` for 2026-07-28 and the
`initialize` handshake for 2025-11-25). Pinning is done with a server middleware that refuses
the other era's entry point the way a single-era server would."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND, UNSUPPORTED_PROTOCOL_VERSION


def pin(server: MCPServer, only: str | None) -> None:
    """`only="legacy"`: no `server/discover` (a 2025-11-25 server); `only="modern"`: no
    `initialize` (a 2026-07-28-only server answers it with -32022 naming its versions)."""
    if only is None:
        return

    async def middleware(ctx: Any, call_next: Any) -> Any:
        if only == "legacy" and ctx.method == "server/discover":
            raise MCPError(code=METHOD_NOT_FOUND, message="Method not found")
        if only == "modern" and ctx.method == "initialize":
            requested = (ctx.params or {}).get("protocolVersion")
            raise MCPError(
                code=UNSUPPORTED_PROTOCOL_VERSION,
                message="Unsupported protocol version",
                data={"supported": ["2026-07-28"], "requested": requested},
            )
        return await call_next(ctx)

    server.middleware.append(middleware)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["legacy", "modern"], default=None)
    parser.add_argument("--http", type=int, default=None, help="serve Streamable HTTP on 127.0.0.1:PORT")
    parser.add_argument("--pidfile", default=None)
    return parser.parse_args()


def run(server: MCPServer, args: argparse.Namespace) -> None:
    if args.pidfile:
        with open(args.pidfile, "w") as fh:
            fh.write(str(os.getpid()))
    pin(server, args.only)
    if args.http:
        import uvicorn

        app = server.streamable_http_app()
        uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")
    elif args.only == "legacy":
        import anyio

        anyio.run(_serve_legacy_stdio, server)
    else:
        server.run("stdio")
    sys.exit(0)


async def _serve_legacy_stdio(server: MCPServer) -> None:
    """The handshake-only loop (what a 2025-11-25 server runs): no era routing, so the client's
    `server/discover` probe is refused and it falls back to `initialize`."""
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    low = server._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        async with low.lifespan(low) as state:
            await serve_loop(
                low,
                read_stream,
                write_stream,
                lifespan_state=state,
                init_options=low.create_initialization_options(),
            )
