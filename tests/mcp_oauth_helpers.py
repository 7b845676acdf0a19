"""Helpers shared by the MCP sign-in tests (not a test module): the file keyring fixture, a
stand-in browser, the authorization server's counters and a one-server manager."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import keyring
import pytest

from mermaid_cli.config.sections.mcp import McpServerSettings
from mermaid_cli.integrations.mcp.manager import McpManager, ServerStatus
from tests.mcp_keyring import FileKeyring


@pytest.fixture
def file_keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FileKeyring]:
    monkeypatch.delenv("MERMAID_NO_KEYRING", raising=False)  # conftest turns the keyring off
    previous = keyring.get_keyring()
    backend = FileKeyring(tmp_path / "keyring.json")
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def browser(url: str) -> None:
    """Stands in for the user's browser: follows the authorization redirect to our callback."""
    response = httpx.get(url, follow_redirects=True, timeout=20)
    assert response.status_code == 200, response.text


def redirect_target(url: str) -> str:
    """Stands in for a browser on another machine: where the authorization server sends it (the
    address the person copies; nothing listens there)."""
    response = httpx.get(url, follow_redirects=False, timeout=20)
    assert response.status_code in (302, 303, 307), response.text
    return response.headers["location"]


def stats(base: str) -> dict[str, Any]:
    return httpx.get(f"{base}/admin/stats").json()


async def start_one(name: str, cfg: McpServerSettings) -> tuple[McpManager, ServerStatus]:
    manager = McpManager({name: cfg}, defer_tools=False)
    status = (await manager.start())[0]
    return manager, status
