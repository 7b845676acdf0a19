"""A test server with resources and prompts (and one tool): text, image and binary resources,
a large text resource, a prompt with a required and an optional argument."""

from __future__ import annotations

import base64
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from _common import parse_args, run  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)

server = MCPServer("rich", log_level="CRITICAL")


@server.tool(description="Search the notes for a word.")
def search_notes(word: str) -> str:
    return f"found {word}"


@server.resource("notes://readme", name="readme", description="The readme", mime_type="text/plain")
def readme() -> str:
    return "Hello from the readme."


@server.resource("notes://big", name="big", description="A large text", mime_type="text/plain")
def big() -> str:
    return "HEAD" + "x" * 150_000 + "TAIL"


@server.resource("notes://logo", name="logo", description="A logo", mime_type="image/png")
def logo() -> bytes:
    return PNG


@server.resource("notes://blob", name="blob", description="Binary data", mime_type="application/octet-stream")
def blob() -> bytes:
    return bytes(range(256)) * 4


@server.prompt(description="Review a file.")
def review(path: str, focus: str = "bugs") -> str:
    return f"Review {path} looking for {focus}."


@server.prompt(description="Say hi.")
def greet() -> str:
    return "Say hello to the team."


if __name__ == "__main__":
    run(server, parse_args())
