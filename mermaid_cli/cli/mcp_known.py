"""A small built-in registry of well-known MCP servers for `mermaid mcp add NAME` (and
`mermaid add NAME`) without a command or URL. Each entry is the config table the command writes,
plus what the user must still provide (a token in the environment, a sign-in)."""

from __future__ import annotations

from typing import Any, NamedTuple


class KnownServer(NamedTuple):
    table: dict[str, Any]
    summary: str
    #: what the server needs before it works, printed after it is added
    needs: str = ""


KNOWN_SERVERS: dict[str, KnownServer] = {
    "filesystem": KnownServer(
        {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]},
        "files under the working directory (reference server; Node.js)",
    ),
    "memory": KnownServer(
        {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
        "a knowledge-graph memory (reference server; Node.js)",
    ),
    "sequential-thinking": KnownServer(
        {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-sequential-thinking"]},
        "step-by-step thinking scratch space (reference server; Node.js)",
    ),
    "everything": KnownServer(
        {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]},
        "every MCP feature, for testing clients (reference server; Node.js)",
    ),
    "fetch": KnownServer(
        {"command": "uvx", "args": ["mcp-server-fetch"]}, "fetch web pages as Markdown (reference server; uv)"
    ),
    "git": KnownServer(
        {"command": "uvx", "args": ["mcp-server-git"]},
        "read and search a git repository (reference server; uv)",
    ),
    "time": KnownServer(
        {"command": "uvx", "args": ["mcp-server-time"]},
        "time and time-zone conversion (reference server; uv)",
    ),
    "playwright": KnownServer(
        {"command": "npx", "args": ["-y", "@playwright/mcp@latest", "--headless"]},
        "drive a browser (Microsoft Playwright; Node.js)",
    ),
    "github": KnownServer(
        {
            "command": "docker",
            "args": [
                "run",
                "-i",
                "--rm",
                "-e",
                "GITHUB_PERSONAL_ACCESS_TOKEN",
                "ghcr.io/github/github-mcp-server",
            ],
        },
        "GitHub issues, pull requests and code (GitHub's server; Docker)",
        "GITHUB_PERSONAL_ACCESS_TOKEN in the environment (pass it with --env)",
    ),
    "context7": KnownServer(
        {"url": "https://mcp.context7.com/mcp"}, "up-to-date library documentation (Upstash; remote)"
    ),
    "notion": KnownServer(
        {"url": "https://mcp.notion.com/mcp"},
        "Notion pages and databases (Notion; remote)",
        "a sign-in: mermaid mcp login notion",
    ),
    "linear": KnownServer(
        {"url": "https://mcp.linear.app/mcp"},
        "Linear issues and projects (Linear; remote)",
        "a sign-in: mermaid mcp login linear",
    ),
    "sentry": KnownServer(
        {"url": "https://mcp.sentry.dev/mcp"},
        "Sentry issues and events (Sentry; remote)",
        "a sign-in: mermaid mcp login sentry",
    ),
}
