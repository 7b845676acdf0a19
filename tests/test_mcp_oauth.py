"""Remote sign-in against a local MCP server that is its own OAuth authorization server, with the
keyring backed by a file (a test backend set with keyring.set_keyring)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mermaid_cli.config.sections.mcp import McpServerSettings
from mermaid_cli.core.errors import UsageError
from mermaid_cli.integrations.mcp.oauth_flow import login
from mermaid_cli.integrations.mcp.oauth_store import KEYRING_SERVICE, load_entry, save_entry
from mermaid_cli.tools.base import ToolContext
from tests import mcp_oauth_helpers
from tests.mcp_helpers import free_port, start_http, stop
from tests.mcp_keyring import FileKeyring
from tests.mcp_oauth_helpers import browser, start_one, stats

file_keyring = mcp_oauth_helpers.file_keyring  # the shared fixture, used by name


@pytest.fixture(scope="module")
def auth_server() -> Iterator[str]:
    proc, port = start_http("oauth_server.py")
    yield f"http://127.0.0.1:{port}"
    stop(proc)


async def test_sign_in_run_refresh_and_failure(
    auth_server: str, file_keyring: FileKeyring, tmp_path: Path
) -> None:
    url = f"{auth_server}/mcp"
    cfg = McpServerSettings(url=url, startup_timeout_secs=20)

    # not signed in: the server does not start, the message names the login command, no browser
    manager, status = await start_one("remote", cfg)
    await manager.aclose()
    assert status.state == "error"
    assert "mermaid mcp login remote" in (status.error or "")
    before = stats(auth_server)
    assert before["authorized"] == 0 and before["registered"] == 0  # a run never registers a client

    # sign in (dynamic client registration, PKCE, resource indicator)
    assert await login("remote", cfg, open_browser=browser, timeout_secs=20) is True
    entry = load_entry("remote")
    assert entry is not None and entry["server_url"] == url
    assert entry["tokens"]["access_token"] and entry["tokens"]["refresh_token"]
    assert entry["client_info"]["client_id"]
    raw = file_keyring.get_password(KEYRING_SERVICE, "mcp-oauth:remote")
    assert raw is not None and json.loads(raw) == entry
    after = stats(auth_server)
    assert after["registered"] == 1 and after["code_exchanges"] == 1
    assert after["resources"][-1] == url

    # a run uses the stored token
    manager, status = await start_one("remote", cfg)
    try:
        assert status.state == "ready", status.error
        tool = manager.lookup("mcp__remote__whoami")
        assert tool is not None
        out = await tool.run(tool.Args(), ToolContext(project_root=tmp_path))
        assert out.content == "authenticated"
    finally:
        await manager.aclose()
    assert stats(auth_server)["refreshes"] == 0

    # expired (by our clock): refreshed before use, the new token stored
    entry = load_entry("remote")
    assert entry is not None
    old_access = entry["tokens"]["access_token"]
    entry["expires_at"] = 1.0
    save_entry("remote", entry)
    manager, status = await start_one("remote", cfg)
    await manager.aclose()
    assert status.state == "ready", status.error
    assert stats(auth_server)["refreshes"] == 1
    entry = load_entry("remote")
    assert entry is not None and entry["tokens"]["access_token"] != old_access

    # the server forgets our access token: the 401 is answered by a refresh, not a browser
    httpx.post(f"{auth_server}/admin/revoke-access")
    manager, status = await start_one("remote", cfg)
    await manager.aclose()
    assert status.state == "ready", status.error
    assert stats(auth_server)["refreshes"] == 2

    # tokens are bound to the URL: the same name pointing elsewhere does not send them
    moved = McpServerSettings(url=f"{auth_server}/mcp/", startup_timeout_secs=20)
    manager, status = await start_one("remote", moved)
    await manager.aclose()
    assert status.state == "error" and "mermaid mcp login remote" in (status.error or "")

    # a failed refresh: the server does not start and says to sign in again
    entry = load_entry("remote")
    assert entry is not None
    entry["expires_at"] = 1.0
    entry["tokens"]["refresh_token"] = "not-a-real-refresh-token"
    save_entry("remote", entry)
    httpx.post(f"{auth_server}/admin/revoke-access")
    manager, status = await start_one("remote", cfg)
    await manager.aclose()
    assert status.state == "error"
    assert "mermaid mcp login remote" in (status.error or "")
    assert stats(auth_server)["authorized"] == 1  # no new browser sign-in was started


async def test_configured_client_id(file_keyring: FileKeyring, monkeypatch: pytest.MonkeyPatch) -> None:
    callback_port = free_port()
    proc, port = start_http(
        "oauth_server.py",
        "--client-id",
        "mermaid-ci",
        "--client-secret",
        "s3cret",
        "--redirect-uri",
        f"http://127.0.0.1:{callback_port}/callback",
    )
    try:
        monkeypatch.setenv("MERMAID_TEST_OAUTH_SECRET", "s3cret")
        cfg = McpServerSettings.model_validate(
            {
                "url": f"http://127.0.0.1:{port}/mcp",
                "oauth": {
                    "client_id": "mermaid-ci",
                    "client_secret_env": "MERMAID_TEST_OAUTH_SECRET",
                    "callback_port": callback_port,
                },
            }
        )
        assert await login("ci", cfg, open_browser=browser, timeout_secs=20) is True
        base = f"http://127.0.0.1:{port}"
        assert stats(base)["registered"] == 0  # the configured client id, no registration
        entry = load_entry("ci")
        assert entry is not None and "client_info" not in entry  # the secret stays in the env
        assert "s3cret" not in json.dumps(entry)
        manager, status = await start_one("ci", cfg)
        await manager.aclose()
        assert status.state == "ready", status.error
    finally:
        stop(proc)


async def test_own_authorization_header_turns_oauth_off(auth_server: str, file_keyring: FileKeyring) -> None:
    cfg = McpServerSettings(
        url=f"{auth_server}/mcp", headers={"Authorization": "Bearer nope"}, startup_timeout_secs=10
    )
    with pytest.raises(UsageError):
        await login("own", cfg, open_browser=browser)
    manager, status = await start_one("own", cfg)
    await manager.aclose()
    assert status.state == "error"
    assert "mermaid mcp login" not in (status.error or "")


async def test_keyring_disabled(auth_server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MERMAID_NO_KEYRING", "1")
    cfg = McpServerSettings(url=f"{auth_server}/mcp", startup_timeout_secs=10)
    with pytest.raises(UsageError, match="MERMAID_NO_KEYRING"):
        await login("nokeys", cfg, open_browser=browser)
    manager, status = await start_one("nokeys", cfg)
    await manager.aclose()
    assert status.state == "error" and "mermaid mcp login nokeys" in (status.error or "")
