"""MCP server lifecycle: failures reported, timeouts, and no child process outliving the manager."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from conftest import pid_alive

from mermaid_cli.config.sections.mcp import McpServerSettings
from mermaid_cli.integrations.mcp.manager import McpManager
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


async def test_failed_servers_are_reported_and_cleaned_up(ctx: ToolContext, tmp_path: Path) -> None:
    hang_pid = tmp_path / "hang.pid"
    manager = McpManager(
        {
            "crash": cfg("crash.py"),
            "hang": cfg("hang.py", str(hang_pid), startup_timeout_secs=2),
            "ok": cfg("basic.py", defer=False),
            "off": cfg("basic.py", enabled=False),
        }
    )
    statuses = {s.name: s for s in await manager.start()}
    try:
        assert statuses["ok"].state == "ready"
        assert statuses["off"].state == "disabled"
        assert statuses["crash"].state == "error"
        assert "missing API token" in (statuses["crash"].error or "")
        assert statuses["hang"].state == "error"
        assert statuses["hang"].error == "did not start within 2 s"
        assert sorted(name for name, _ in manager.errors()) == ["crash", "hang"]
        # the run goes on with the good server
        assert (await run(manager, "mcp__ok__echo", ctx, text="x")).content == "echo: x"
        assert not any(
            t.name.startswith(("mcp__crash", "mcp__hang", "mcp__off")) for t in manager.current_tools()
        )
        pid = read_pid(hang_pid)
    finally:
        await manager.aclose()
    assert not pid_alive(pid)


async def test_tool_call_timeout(ctx: ToolContext) -> None:
    manager = McpManager({"s": cfg("basic.py", defer=False)}, tool_timeout_secs=1)
    await manager.start()
    try:
        out = await run(manager, "mcp__s__slow", ctx, seconds=30)
        assert out.is_error and "timed out after 1 s" in out.content
        # the server still answers afterwards
        assert (await run(manager, "mcp__s__echo", ctx, text="after")).content == "echo: after"
    finally:
        await manager.aclose()


async def test_close_while_starting_kills_child(tmp_path: Path) -> None:
    hang_pid = tmp_path / "hang.pid"
    manager = McpManager({"hang": cfg("hang.py", str(hang_pid), startup_timeout_secs=60)})
    start = asyncio.create_task(manager.start())
    pid = await asyncio.to_thread(read_pid, hang_pid)
    await manager.aclose()
    statuses = await start
    assert statuses[0].state == "error"
    # killed by the close; on a loaded machine its exit can trail the close by a moment
    for _ in range(100):
        if not pid_alive(pid):
            break
        await asyncio.sleep(0.1)
    assert not pid_alive(pid)


async def test_server_dying_mid_run_gives_error_results(ctx: ToolContext, tmp_path: Path) -> None:
    pidfile = tmp_path / "s.pid"
    manager = McpManager({"s": cfg("basic.py", "--pidfile", str(pidfile), defer=False)}, tool_timeout_secs=20)
    await manager.start()
    try:
        pid = read_pid(pidfile)
        died = await run(manager, "mcp__s__die", ctx)
        assert died.is_error
        after = await run(manager, "mcp__s__echo", ctx, text="x")
        assert after.is_error and "timed out" not in after.content
        # the dead server's tools leave the list; the run goes on
        assert manager.current_tools() == []
        assert manager.errors() == [("s", "connection to the server was lost")]
    finally:
        await manager.aclose()
    assert not pid_alive(pid)
