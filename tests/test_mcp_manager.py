"""The MCP manager against real stdio test servers (tests/mcp_servers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import pid_alive

from mermaid_cli.config.sections.mcp import McpServerSettings
from mermaid_cli.core.errors import UsageError
from mermaid_cli.integrations.mcp.manager import McpManager
from mermaid_cli.integrations.mcp.prompts import fetch_prompt
from mermaid_cli.tools.base import ToolContext
from tests.mcp_helpers import read_pid, server_args


def cfg(script: str, *extra: str, **kw: object) -> McpServerSettings:
    return McpServerSettings.model_validate({**server_args(script, *extra), **kw})


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(project_root=tmp_path)


async def run(manager: McpManager, name: str, ctx: ToolContext, **args: object):
    tool = manager.lookup(name)
    assert tool is not None, name
    return await tool.run(tool.Args.model_validate(args), ctx)


async def test_both_protocol_versions_and_tool_calls(ctx: ToolContext, tmp_path: Path) -> None:
    pidfile = tmp_path / "legacy.pid"
    manager = McpManager(
        {
            "old": cfg("basic.py", "--only", "legacy", "--pidfile", str(pidfile), disabled_tools=["slow"]),
            "new": cfg("basic.py", "--only", "modern", enabled_tools=["echo", "fail"]),
        },
        defer_tools=False,
    )
    statuses = {s.name: s for s in await manager.start()}
    try:
        assert statuses["old"].state == "ready" and statuses["old"].protocol_version == "2025-11-25"
        assert statuses["new"].state == "ready" and statuses["new"].protocol_version == "2026-07-28"
        names = [t.name for t in manager.current_tools()]
        assert "mcp__old__add" in names and "mcp__old__slow" not in names  # disabled wins
        assert sorted(n for n in names if n.startswith("mcp__new__")) == ["mcp__new__echo", "mcp__new__fail"]
        # tools-only servers: no resource tools, nothing deferred: no tool_search
        assert "list_mcp_resources" not in names and "tool_search" not in names

        echo = manager.lookup("mcp__new__echo")
        assert echo is not None and echo.category == "mcp" and echo.read_only_hint is True
        assert manager.lookup("mcp__old__add").read_only_hint is False  # type: ignore[union-attr]

        for server in ("old", "new"):
            out = await run(manager, f"mcp__{server}__echo", ctx, text="hi")
            assert not out.is_error and out.content == "echo: hi"
        assert (await run(manager, "mcp__old__add", ctx, a=2, b=3)).content == "5"

        failed = await run(manager, "mcp__new__fail", ctx, reason="nope")
        assert failed.is_error and "failed because nope" in failed.content

        pixel = await run(manager, "mcp__old__pixel", ctx)
        assert pixel.images and pixel.images[0].media_type == "image/png"

        lookup = manager.lookup("mcp__old__lookup")
        schema = lookup.spec().input_schema  # type: ignore[union-attr]
        assert "$defs" not in schema and schema["properties"]["point"]["type"] == "object"
        assert (await run(manager, "mcp__old__lookup", ctx, point={"x": 1, "y": 2})).content == "point at 1,2"

        long_name = [n for n in names if n.startswith("mcp__old__a_really")]
        assert len(long_name) == 1 and len(long_name[0]) <= 64
        assert (await run(manager, long_name[0], ctx)).content == "long"

        # concurrent calls on one server are answered independently
        import asyncio

        many = await asyncio.gather(*(run(manager, "mcp__old__add", ctx, a=i, b=1) for i in range(5)))
        assert [r.content for r in many] == ["1", "2", "3", "4", "5"]

        bad = await run(manager, "mcp__old__add", ctx, a="x")
        assert bad.is_error
        pid = read_pid(pidfile)
        assert pid_alive(pid)
    finally:
        await manager.aclose()
    assert not pid_alive(pid)
    # after close, calls fail as data
    assert (await run(manager, "mcp__old__add", ctx, a=1, b=1)).is_error


async def test_deferral_tool_search_promotes(ctx: ToolContext) -> None:
    manager = McpManager({"d": cfg("basic.py"), "direct": cfg("rich.py", defer=False)})
    await manager.start()
    try:
        names = [t.name for t in manager.current_tools()]
        assert "tool_search" in names
        assert not any(n.startswith("mcp__d__") for n in names)
        assert "mcp__direct__search_notes" in names  # per-server defer=false
        # a deferred tool called directly by its full name still works
        assert (await run(manager, "mcp__d__add", ctx, a=1, b=1)).content == "2"

        found = await run(manager, "tool_search", ctx, query="image png")
        assert not found.is_error and "mcp__d__pixel" in found.content
        names = [t.name for t in manager.current_tools()]
        assert "mcp__d__pixel" in names and "mcp__d__add" not in names
        assert "mcp__d__pixel" in manager.promoted

        nothing = await run(manager, "tool_search", ctx, query="kubernetes")
        assert "No MCP tools match" in nothing.content
    finally:
        await manager.aclose()


async def test_resources_and_prompts(ctx: ToolContext) -> None:
    manager = McpManager({"notes": cfg("rich.py"), "plain": cfg("basic.py", "--only", "legacy")})
    await manager.start()
    try:
        assert {"list_mcp_resources", "read_mcp_resource"} <= {t.name for t in manager.current_tools()}
        listing = await run(manager, "list_mcp_resources", ctx)
        entries = json.loads(listing.content)  # a JSON list, as documented
        assert {
            "server": "notes",
            "uri": "notes://readme",
            "name": "readme",
            "description": "The readme",
            "mimeType": "text/plain",
        } in entries
        only = await run(manager, "list_mcp_resources", ctx, server="plain")
        assert only.is_error  # no resources capability

        text = await run(manager, "read_mcp_resource", ctx, server="notes", uri="notes://readme")
        assert text.content == "Hello from the readme."
        big = await run(manager, "read_mcp_resource", ctx, server="notes", uri="notes://big")
        assert len(big.content) <= 100_100 and big.content.startswith("HEAD") and big.content.endswith("TAIL")
        assert "characters cut" in big.content
        image = await run(manager, "read_mcp_resource", ctx, server="notes", uri="notes://logo")
        assert image.images and image.images[0].media_type == "image/png"
        blob = await run(manager, "read_mcp_resource", ctx, server="notes", uri="notes://blob")
        assert blob.content == "[binary: notes://blob (application/octet-stream, 1024 bytes)]"
        missing = await run(manager, "read_mcp_resource", ctx, server="notes", uri="notes://nope")
        assert missing.is_error

        assert await fetch_prompt(manager, "notes/review", ["a.py"]) == "Review a.py looking for bugs."
        assert (
            await fetch_prompt(manager, "notes/review", ["a.py", "race", "conditions"])
            == "Review a.py looking for race conditions."
        )
        assert await fetch_prompt(manager, "notes/greet", []) == "Say hello to the team."
        with pytest.raises(UsageError) as err:
            await fetch_prompt(manager, "notes/review", [])
        assert "usage: mermaid exec --mcp-prompt notes/review PATH [FOCUS]" in err.value.message
        assert err.value.exit_code == 2
        with pytest.raises(UsageError):
            await fetch_prompt(manager, "notes/nope", [])
        with pytest.raises(UsageError):
            await fetch_prompt(manager, "ghost/review", [])
    finally:
        await manager.aclose()
    assert "list_mcp_resources" not in {t.name for t in manager.current_tools()}
