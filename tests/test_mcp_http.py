"""The MCP manager against real Streamable HTTP test servers on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mermaid_cli.config.sections.mcp import McpServerSettings
from mermaid_cli.integrations.mcp.manager import McpManager
from mermaid_cli.tools.base import ToolContext
from tests.mcp_helpers import start_http, stop


@pytest.fixture(scope="module")
def legacy_url() -> Iterator[str]:
    proc, port = start_http("basic.py", "--only", "legacy")
    yield f"http://127.0.0.1:{port}/mcp"
    stop(proc)


@pytest.fixture(scope="module")
def modern_url() -> Iterator[str]:
    proc, port = start_http("basic.py", "--only", "modern")
    yield f"http://127.0.0.1:{port}/mcp"
    stop(proc)


async def call(manager: McpManager, tool_name: str, tmp_path: Path, /, **args: object):
    tool = manager.lookup(tool_name)
    assert tool is not None, tool_name
    return await tool.run(tool.Args.model_validate(args), ToolContext(project_root=tmp_path))


async def test_http_both_versions_headers_and_env_headers(
    legacy_url: str, modern_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MERMAID_TEST_MCP_TOKEN", "first")
    servers = {
        "old": McpServerSettings(url=legacy_url, headers={"X-Team": "core"}),
        "new": McpServerSettings(url=modern_url, env_headers={"X-Token": "MERMAID_TEST_MCP_TOKEN"}),
    }
    manager = McpManager(servers, defer_tools=False)
    statuses = {s.name: s for s in await manager.start()}
    try:
        assert statuses["old"].state == "ready", statuses["old"].error
        assert statuses["new"].state == "ready", statuses["new"].error
        assert statuses["old"].transport == "http"
        assert statuses["old"].protocol_version == "2025-11-25"
        assert statuses["new"].protocol_version == "2026-07-28"
        assert (await call(manager, "mcp__old__add", tmp_path, a=40, b=2)).content == "42"
        assert (await call(manager, "mcp__new__echo", tmp_path, text="hi")).content == "echo: hi"
        assert (await call(manager, "mcp__old__header", tmp_path, name="X-Team")).content == "core"
        assert (await call(manager, "mcp__new__header", tmp_path, name="X-Token")).content == "first"
        # env headers are read at request time
        monkeypatch.setenv("MERMAID_TEST_MCP_TOKEN", "rotated")
        assert (await call(manager, "mcp__new__header", tmp_path, name="X-Token")).content == "rotated"
        pixel = await call(manager, "mcp__new__pixel", tmp_path)
        assert pixel.images
    finally:
        await manager.aclose()


async def test_unreachable_http_server_is_an_error_entry() -> None:
    from tests.mcp_helpers import free_port

    manager = McpManager(
        {"gone": McpServerSettings(url=f"http://127.0.0.1:{free_port()}/mcp", startup_timeout_secs=5)}
    )
    statuses = await manager.start()
    await manager.aclose()
    assert statuses[0].state == "error" and statuses[0].error


def test_http_url_rules() -> None:
    with pytest.raises(ValueError):
        McpServerSettings(url="http://example.com/mcp")
    with pytest.raises(ValueError):
        McpServerSettings(url="https://example.com/mcp", command="x")
    with pytest.raises(ValueError):
        McpServerSettings()
    assert McpServerSettings(url="https://example.com/mcp").transport == "http"
    assert McpServerSettings(url="http://localhost:1/mcp").transport == "http"
    assert McpServerSettings(
        url="https://e.com", headers={"authorization": "Bearer x"}
    ).sends_own_authorization()
