"""Against the reference server `@modelcontextprotocol/server-everything` from npm (via `npx -y`)."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest

from mermaid_cli.config.sections.mcp import McpServerSettings
from mermaid_cli.integrations.mcp.manager import McpManager
from mermaid_cli.integrations.mcp.prompts import fetch_prompt
from mermaid_cli.tools.base import ToolContext

pytestmark = pytest.mark.skipif(shutil.which("npx") is None, reason="npx is not installed")


def marked_processes(marker: str) -> list[int]:
    """Pids whose environment carries `marker` (children and grandchildren inherit it)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if marker.encode() in (proc / "environ").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


async def test_server_everything(tmp_path: Path) -> None:
    marker = f"MERMAID_TEST_MARKER_{uuid.uuid4().hex}"
    cfg = McpServerSettings(
        command="npx",
        args=["-y", "@modelcontextprotocol/server-everything"],
        env={marker: "1"},
        startup_timeout_secs=240,  # the first run downloads the package
    )
    manager = McpManager({"everything": cfg}, defer_tools=False)
    status = (await manager.start())[0]
    ctx = ToolContext(project_root=tmp_path)
    try:
        assert status.state == "ready", status.error
        assert status.tools > 0 and status.prompts > 0 and status.resources
        names = {t.name for t in manager.current_tools()}
        assert {"mcp__everything__echo", "list_mcp_resources", "read_mcp_resource"} <= names

        echo = manager.lookup("mcp__everything__echo")
        assert echo is not None
        out = await echo.run(echo.Args(message="hello"), ctx)
        assert not out.is_error and "hello" in out.content

        image = manager.lookup("mcp__everything__get-tiny-image")
        if image is not None:
            shot = await image.run(image.Args(), ctx)
            assert shot.images

        listing = manager.lookup("list_mcp_resources")
        assert listing is not None
        listed = await listing.run(listing.Args(server="everything"), ctx)
        uri = next(e["uri"] for e in json.loads(listed.content) if "uri" in e)
        reader = manager.lookup("read_mcp_resource")
        assert reader is not None
        read = await reader.run(reader.Args(server="everything", uri=uri), ctx)
        assert not read.is_error and read.content

        prompts = {p.name for p in manager.prompts("everything") or []}
        if "simple-prompt" in prompts:
            assert await fetch_prompt(manager, "everything/simple-prompt", [])
        assert marked_processes(marker)  # the server (npx and node) runs
    finally:
        await manager.aclose()
    assert marked_processes(marker) == []  # and nothing of it outlives the manager
