"""A test server for the loop's own call options: `paint` has a `background` parameter of its
own; `keys` reports which arguments reached the server; `search` documents optional parameters
(for the deferred-tool note)."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from _common import parse_args, run  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402

server = MCPServer("options", log_level="CRITICAL")


@server.tool(description="Paint a shape.")
def paint(color: str, background: str = "white") -> str:
    return f"{color} on {background}"


@server.tool(description="Report the names of the arguments the server received.")
def keys(text: str = "", scratchpad_like: str = "") -> str:
    return f"received text={text!r}"


@server.tool(description="Search the catalogue. Returns matching items.")
def search(query: str, limit: int = 10, include_archived: bool = False) -> str:
    """`limit`: most items; `include_archived`: also archived ones."""
    return f"{limit} results for {query} (archived: {include_archived})"


for method in ("resources/list", "resources/read", "resources/templates/list", "prompts/list", "prompts/get"):
    server._lowlevel_server._request_handlers.pop(method, None)

if __name__ == "__main__":
    run(server, parse_args())
