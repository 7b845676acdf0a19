"""`mermaid mcp …` commands: they edit the user config file and probe servers."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from mermaid_cli.cli.mcp import mcp_group, user_config_path
from tests.mcp_helpers import PY, SERVERS, start_http, stop

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MERMAID_CONFIG_DIR", str(tmp_path / "cfg"))
    return tmp_path / "cfg"


def invoke(*args: str):
    return CliRunner().invoke(mcp_group, list(args), catch_exceptions=False)


def config(config_dir: Path) -> dict:
    return tomllib.loads((config_dir / "config.toml").read_text())


def test_add_remove_preserves_other_content(config_dir: Path) -> None:
    config_dir.mkdir()
    (config_dir / "config.toml").write_text('model = "anthropic/claude"\n\n[safety]\nmode = "ask"\n')
    assert user_config_path() == config_dir / "config.toml"

    result = invoke("add", "files", "--", "npx", "-y", "@scope/server", "--root", ".")
    assert result.exit_code == 0, result.output
    result = invoke(
        "add",
        "remote",
        "--url",
        "https://mcp.example.com/mcp",
        "--header",
        "X-Team: core",
        "--client-id",
        "abc",
        "--client-secret-env",
        "MY_SECRET",
        "--callback-port",
        "8765",
    )
    assert result.exit_code == 0, result.output
    data = config(config_dir)
    assert data["model"] == "anthropic/claude" and data["safety"] == {"mode": "ask"}
    assert data["mcp_servers"]["files"] == {"command": "npx", "args": ["-y", "@scope/server", "--root", "."]}
    assert data["mcp_servers"]["remote"] == {
        "url": "https://mcp.example.com/mcp",
        "headers": {"X-Team": "core"},
        "oauth": {"client_id": "abc", "client_secret_env": "MY_SECRET", "callback_port": 8765},
    }

    # duplicates need --force; bad input is a usage error (exit 2) and changes nothing
    assert invoke("add", "files", "--", "other").exit_code == 2
    assert invoke("add", "web", "--url", "http://example.com/mcp").exit_code == 2
    assert invoke("add", "both", "--url", "https://x.dev/mcp", "--", "cmd").exit_code == 2
    assert invoke("add", "neither").exit_code == 2
    assert invoke("add", "h", "--url", "https://x.dev/mcp", "--header", "no-colon").exit_code == 2
    assert set(config(config_dir)["mcp_servers"]) == {"files", "remote"}
    assert invoke("add", "files", "--force", "--", "other").exit_code == 0
    assert config(config_dir)["mcp_servers"]["files"] == {"command": "other"}

    assert invoke("remove", "files").exit_code == 0
    assert invoke("remove", "files").exit_code == 2
    assert invoke("remove", "remote").exit_code == 0
    data = config(config_dir)
    assert "mcp_servers" not in data and data["safety"] == {"mode": "ask"}


def test_list_json_reports_status(config_dir: Path) -> None:
    assert invoke("add", "notes", "--", PY, str(SERVERS / "rich.py")).exit_code == 0
    assert invoke("add", "old", "--", PY, str(SERVERS / "basic.py"), "--only", "legacy").exit_code == 0
    assert invoke("add", "broken", "--", PY, str(SERVERS / "crash.py")).exit_code == 0
    result = invoke("list", "--json")
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["notes"]["status"] == "ready"
    assert rows["notes"]["protocol_version"] == "2026-07-28"
    assert (rows["notes"]["tools"], rows["notes"]["prompts"], rows["notes"]["resources"]) == (1, 2, True)
    assert rows["old"]["protocol_version"] == "2025-11-25"
    assert rows["old"]["resources"] is False and rows["old"]["tools"] == 9
    assert rows["broken"]["status"] == "error" and "missing API token" in rows["broken"]["error"]

    text = invoke("list")
    assert "ready, protocol 2026-07-28, 1 tools, 2 prompts, resources yes" in text.output


def test_login_logout_through_the_cli(tmp_path: Path) -> None:
    """The real commands in a subprocess: the browser is $BROWSER, the keyring a file backend."""
    proc, port = start_http("oauth_server.py")
    try:
        env = {
            **{k: v for k, v in os.environ.items() if k != "MERMAID_NO_KEYRING"},
            "MERMAID_CONFIG_DIR": str(tmp_path / "cfg"),
            "BROWSER": f"{PY} {SERVERS / 'fake_browser.py'} %s",
            "PYTHON_KEYRING_BACKEND": "tests.mcp_keyring.FileKeyring",
            "MERMAID_TEST_KEYRING_FILE": str(tmp_path / "keyring.json"),
            "PYTHONPATH": str(ROOT),
        }
        cli = [PY, "-c", "from mermaid_cli.cli.mcp import mcp_group; mcp_group()"]

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*cli, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
            )

        assert run("add", "remote", "--url", f"http://127.0.0.1:{port}/mcp").returncode == 0
        before = json.loads(run("list", "--json").stdout)[0]
        assert before["status"] == "error" and "mermaid mcp login remote" in before["error"]

        login = run("login", "remote")
        assert login.returncode == 0, login.stderr
        assert "Signed in" in login.stderr
        stored = json.loads((tmp_path / "keyring.json").read_text())
        assert list(stored) == ["mermaid\0mcp-oauth:remote"]

        after = json.loads(run("list", "--json").stdout)[0]
        assert after["status"] == "ready" and after["signed_in"] is True

        logout = run("logout", "remote")
        assert logout.returncode == 0 and "Signed out" in logout.stderr
        assert json.loads((tmp_path / "keyring.json").read_text()) == {}
        assert "No stored sign-in" in run("logout", "remote").stderr
        assert run("login", "nosuch").returncode == 2
    finally:
        stop(proc)
