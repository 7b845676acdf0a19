"""A tools-only test server: `echo`, `add`, `fail` (isError), `pixel` (image), `lookup` ($ref schema),
`slow` and a long-named tool. Flags: --only legacy|modern, --http PORT, --pidfile FILE."""

from __future__ import annotations

import base64
import os
import sys

import anyio

sys.path.insert(0, os.path.dirname(__file__))

from _common import parse_args, run  # noqa: E402
from mcp.server.mcpserver import Context, MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402
from mcp.server.mcpserver.utilities.types import Image  # noqa: E402
from mcp_types import ToolAnnotations  # noqa: E402
from pydantic import BaseModel  # noqa: E402

# 1x1 transparent PNG
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)

server = MCPServer("basic", log_level="CRITICAL")


@server.tool(description="Echo the text back.", annotations=ToolAnnotations(readOnlyHint=True))
def echo(text: str) -> str:
    return f"echo: {text}"


@server.tool(description="Add two integers and write the sum to a ledger.")
def add(a: int, b: int) -> str:
    return str(a + b)


@server.tool(description="Always fails.")
def fail(reason: str = "bad") -> str:
    raise ToolError(f"failed because {reason}")


@server.tool(description="Return a tiny PNG image and a caption.")
def pixel() -> list:
    return ["a pixel", Image(data=PNG, format="png")]


class Point(BaseModel):
    x: int
    y: int


@server.tool(description="Look up a point (nested model schema).")
def lookup(point: Point, label: str | None = None) -> str:
    return f"{label or 'point'} at {point.x},{point.y}"


@server.tool(description="Return the value of an HTTP request header (Streamable HTTP only).")
def header(name: str, ctx: Context) -> str:
    headers = ctx.headers or {}
    return headers.get(name.lower(), "<missing>")


@server.tool(description="Exit the server process at once (simulates a crash mid-run).")
def die() -> str:
    os._exit(1)


@server.tool(description="Sleep for the given seconds.")
async def slow(seconds: float) -> str:
    await anyio.sleep(seconds)
    return "done"


@server.tool(
    name="a_really_long_tool_name_that_goes_on_and_on.with.dots and spaces",
    description="A tool whose name needs sanitising.",
)
def long_name() -> str:
    return "long"


# tools only: the SDK registers resource and prompt handlers on every MCPServer; drop them so
# this server does not advertise those capabilities
for method in ("resources/list", "resources/read", "resources/templates/list", "prompts/list", "prompts/get"):
    server._lowlevel_server._request_handlers.pop(method, None)

if __name__ == "__main__":
    run(server, parse_args())
