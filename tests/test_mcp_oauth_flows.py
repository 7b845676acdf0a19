"""Sign-in variants against the local MCP + OAuth server: the Client ID Metadata Document as client
id, the RFC 9207 `iss` check, the paste-the-redirect sign-in (in process and through the real CLI),
and `403 insufficient_scope` (a run fails the call naming the scopes; the next sign-in asks for
them)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest
from conftest import calls, run_mermaid, say, write_script

from mermaid_cli.config.sections.mcp import McpServerSettings
from mermaid_cli.core.errors import UsageError
from mermaid_cli.integrations.mcp.oauth import DEFAULT_CLIENT_METADATA_URL
from mermaid_cli.integrations.mcp.oauth_flow import login
from mermaid_cli.integrations.mcp.oauth_store import load_entry
from mermaid_cli.tools.base import ToolContext
from tests import mcp_oauth_helpers
from tests.mcp_helpers import PY, free_port, start_http, stop
from tests.mcp_keyring import FileKeyring
from tests.mcp_oauth_helpers import browser, redirect_target, start_one, stats

file_keyring = mcp_oauth_helpers.file_keyring  # the shared fixture, used by name
ROOT = Path(__file__).resolve().parents[1]


def server(*flags: str) -> tuple[subprocess.Popen[bytes], str]:
    proc, port = start_http("oauth_server.py", *flags)
    return proc, f"http://127.0.0.1:{port}"


def settings(base: str, **oauth: object) -> McpServerSettings:
    table: dict[str, object] = {"url": f"{base}/mcp", "startup_timeout_secs": 20}
    if oauth:
        table["oauth"] = oauth
    return McpServerSettings.model_validate(table)


class Paster:
    """A person on a remote shell: reads the printed URL, signs in elsewhere, pastes the address
    the browser ended on (changed by `edit` to play an attacker or a typo)."""

    def __init__(self, edit: object = None) -> None:
        self.url: str | None = None
        self.edit = edit

    def show(self, url: str) -> None:
        self.url = url

    def paste(self) -> str:
        assert self.url is not None, "the sign-in URL was not shown before the paste"
        target = redirect_target(self.url)
        return (self.edit(target) if callable(self.edit) else target) + "\n"


def drop_state(url: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "state"]
    return urlunsplit(parts._replace(query=urlencode(query)))


async def test_client_id_metadata_document(file_keyring: FileKeyring, tmp_path: Path) -> None:
    proc, base = server("--cimd")
    try:
        # the default: Mermaid's document URL is the client id, no registration call
        cfg = settings(base)
        assert await login("cimd", cfg, open_browser=browser, timeout_secs=20) is True
        seen = stats(base)
        assert seen["registered"] == 0
        assert seen["client_ids"] == [DEFAULT_CLIENT_METADATA_URL]
        entry = load_entry("cimd")
        assert entry is not None and entry["client_info"]["client_id"] == DEFAULT_CLIENT_METADATA_URL
        manager, status = await start_one("cimd", cfg)
        try:
            assert status.state == "ready", status.error
            tool = manager.lookup("mcp__cimd__whoami")
            assert tool is not None
            assert (
                await tool.run(tool.Args(), ToolContext(project_root=tmp_path))
            ).content == "authenticated"
        finally:
            await manager.aclose()

        # a configured document URL replaces the default
        own = "https://ci.example.com/mermaid/client.json"
        assert await login(
            "own", settings(base, client_metadata_url=own), open_browser=browser, timeout_secs=20
        )
        assert stats(base)["client_ids"][-1] == own and stats(base)["registered"] == 0

        # "" turns CIMD off: dynamic registration
        assert await login(
            "dcr", settings(base, client_metadata_url=""), open_browser=browser, timeout_secs=20
        )
        assert stats(base)["registered"] == 1
        assert stats(base)["client_ids"][-1] not in (own, DEFAULT_CLIENT_METADATA_URL)
    finally:
        stop(proc)


async def test_configured_client_wins_over_metadata_document(file_keyring: FileKeyring) -> None:
    """The spec's order: pre-registered client first, then CIMD, then DCR."""
    port = free_port()
    proc, base = server(
        "--cimd", "--client-id", "mermaid-ci", "--redirect-uri", f"http://127.0.0.1:{port}/callback"
    )
    try:
        cfg = settings(base, client_id="mermaid-ci", callback_port=port)
        assert await login("ci", cfg, open_browser=browser, timeout_secs=20) is True
        assert stats(base)["client_ids"] == ["mermaid-ci"] and stats(base)["registered"] == 0
    finally:
        stop(proc)


def test_metadata_url_must_be_https_with_a_path() -> None:
    for bad in ("http://example.com/client.json", "https://example.com/", "https://example.com"):
        with pytest.raises(ValueError, match="client_metadata_url"):
            settings("http://127.0.0.1:1", client_metadata_url=bad)


async def test_iss_checked_when_the_server_advertises_it(file_keyring: FileKeyring) -> None:
    good, good_base = server("--iss", "correct")
    wrong, wrong_base = server("--iss", "wrong")
    omit, omit_base = server("--iss", "omit")
    try:
        assert await login("good", settings(good_base), open_browser=browser, timeout_secs=20) is True

        with pytest.raises(UsageError, match=r"issuer 'https://evil.example/'.*mix-up"):
            await login("wrong", settings(wrong_base), open_browser=browser, timeout_secs=20)
        assert stats(wrong_base)["authorized"] == 1 and stats(wrong_base)["code_exchanges"] == 0
        entry = load_entry("wrong")
        assert entry is None or not entry.get("tokens")

        with pytest.raises(UsageError, match="carries no `iss`"):
            await login("omit", settings(omit_base), open_browser=browser, timeout_secs=20)
        assert stats(omit_base)["code_exchanges"] == 0
        entry = load_entry("omit")
        assert entry is None or not entry.get("tokens")
    finally:
        for proc in (good, wrong, omit):
            stop(proc)


async def test_paste_sign_in(file_keyring: FileKeyring) -> None:
    proc, base = server("--iss", "correct")
    plain, plain_base = server()
    try:
        # the whole address, with state and iss
        person = Paster()
        assert await login("p", settings(base), open_browser=person.show, paste=person.paste, timeout_secs=20)
        assert stats(base)["code_exchanges"] == 1

        # a foreign state: refused before the code is redeemed, nothing stored
        person = Paster(lambda url: url.replace("state=", "state=x"))
        with pytest.raises(UsageError, match="`state` does not match"):
            await login("p2", settings(base), open_browser=person.show, paste=person.paste, timeout_secs=20)
        assert stats(base)["code_exchanges"] == 1
        entry = load_entry("p2")
        assert entry is None or not entry.get("tokens")

        # an address without any state: refused too (only a bare code may lack it)
        person = Paster(drop_state)
        with pytest.raises(UsageError, match="`state` does not match"):
            await login("p2b", settings(base), open_browser=person.show, paste=person.paste, timeout_secs=20)
        assert stats(base)["code_exchanges"] == 1

        # a bare code where the server promises `iss`: refused (the mix-up check needs the address)
        person = Paster(lambda url: url.split("code=")[1].split("&")[0])
        with pytest.raises(UsageError, match="paste the whole address"):
            await login("p3", settings(base), open_browser=person.show, paste=person.paste, timeout_secs=20)
        assert stats(base)["code_exchanges"] == 1

        # a bare code where it does not: accepted
        person = Paster(lambda url: url.split("code=")[1].split("&")[0])
        assert await login(
            "p4", settings(plain_base), open_browser=person.show, paste=person.paste, timeout_secs=20
        )
        assert stats(plain_base)["code_exchanges"] == 1

        # end of input: a clear error
        with pytest.raises(UsageError, match="end of input"):
            await login(
                "p5", settings(plain_base), open_browser=lambda _u: None, paste=lambda: "", timeout_secs=20
            )
    finally:
        stop(proc)
        stop(plain)


def _cli_env(tmp_path: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if k != "MERMAID_NO_KEYRING"},
        "MERMAID_CONFIG_DIR": str(tmp_path / "cfg"),
        "BROWSER": "false",  # --paste must not try a browser; if it did, nothing would open
        "PYTHON_KEYRING_BACKEND": "tests.mcp_keyring.FileKeyring",
        "MERMAID_TEST_KEYRING_FILE": str(tmp_path / "keyring.json"),
        "PYTHONPATH": str(ROOT),
    }


def _cli_login_paste(env: dict[str, str], edit: object = None) -> tuple[int, str, str]:
    """`mermaid mcp login remote --paste`: read the URL from stderr, paste the redirect on stdin."""
    cli = [PY, "-c", "from mermaid_cli.cli.mcp import mcp_group; mcp_group()", "login", "remote", "--paste"]
    proc = subprocess.Popen(
        cli,
        env=env,
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stderr is not None
    seen: list[str] = []
    url = None
    for line in proc.stderr:
        seen.append(line)
        if line.strip().startswith("http://"):
            url = line.strip()
            break
    assert url is not None, "".join(seen)
    target = redirect_target(url)
    proc.stdin.write((edit(target) if callable(edit) else target) + "\n")
    proc.stdin.flush()
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, "".join(seen) + err


def test_paste_sign_in_through_the_cli(tmp_path: Path) -> None:
    proc, base = server("--iss", "correct")
    try:
        env = _cli_env(tmp_path)
        add = [
            PY,
            "-c",
            "from mermaid_cli.cli.mcp import mcp_group; mcp_group()",
            "add",
            "remote",
            "--url",
            f"{base}/mcp",
        ]
        assert subprocess.run(add, env=env, cwd=ROOT, capture_output=True, timeout=60).returncode == 0

        code, out, err = _cli_login_paste(env, lambda url: url.replace("state=", "state=forged"))
        assert code == 2, err
        assert "state" in err and "does not match" in err
        assert stats(base)["code_exchanges"] == 0
        assert "Traceback" not in err
        keyring_file = tmp_path / "keyring.json"
        stored = json.loads(keyring_file.read_text()) if keyring_file.exists() else {}
        assert all("tokens" not in json.loads(value) for value in stored.values())

        code, out, err = _cli_login_paste(env)
        assert code == 0, err
        assert "Signed in to MCP server 'remote'" in err
        stored = json.loads(json.loads(keyring_file.read_text())["mermaid\0mcp-oauth:remote"])
        token = stored["tokens"]["access_token"]
        assert token not in out and token not in err and out == ""
    finally:
        stop(proc)


async def test_insufficient_scope(file_keyring: FileKeyring, tmp_path: Path) -> None:
    proc, base = server("--step-up")
    try:
        cfg = settings(base)
        assert await login("remote", cfg, open_browser=browser, timeout_secs=20) is True
        assert stats(base)["scopes"] == ["mcp"]
        ctx = ToolContext(project_root=tmp_path)

        # headless: the call fails with the scopes and the command; no sign-in, no retry loop
        manager, status = await start_one("remote", cfg)
        try:
            assert status.state == "ready", status.error
            tool = manager.lookup("mcp__remote__admin_report")
            assert tool is not None
            out = await tool.run(tool.Args(), ctx)
            assert out.is_error
            assert "scopes: mcp admin" in out.content and "mermaid mcp login remote" in out.content
            assert stats(base)["insufficient_scope"] == 1 and stats(base)["authorized"] == 1
            # the session is intact: other calls still work
            whoami = manager.lookup("mcp__remote__whoami")
            assert whoami is not None
            assert (await whoami.run(whoami.Args(), ctx)).content == "authenticated"
        finally:
            await manager.aclose()
        entry = load_entry("remote")
        assert entry is not None and entry["step_up_scope"] == "mcp admin"

        # the next sign-in asks for the old and the new scopes together
        assert await login("remote", cfg, open_browser=browser, timeout_secs=20) is True
        assert stats(base)["scopes"][-1] == "mcp admin"
        entry = load_entry("remote")
        assert entry is not None and "step_up_scope" not in entry
        manager, status = await start_one("remote", cfg)
        try:
            assert status.state == "ready", status.error
            tool = manager.lookup("mcp__remote__admin_report")
            assert tool is not None
            assert (await tool.run(tool.Args(), ctx)).content == "admin report"
        finally:
            await manager.aclose()
    finally:
        stop(proc)


async def test_scripted_run_keeps_tokens_out_and_reports_step_up(
    file_keyring: FileKeyring,
    tmp_path: Path,
    project: Path,
    isolated_env: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A real `mermaid exec`: a server that echoes our tokens has them redacted from stdout and the
    session files; a 403 insufficient_scope is a failed call naming the scopes, not a hang."""
    proc, base = server("--step-up")
    try:
        monkeypatch.delenv("MERMAID_NO_KEYRING", raising=False)  # isolated_env turned it off
        assert await login("remote", settings(base), open_browser=browser, timeout_secs=20) is True
        entry = load_entry("remote")
        assert entry is not None
        tokens = [entry["tokens"]["access_token"], entry["tokens"]["refresh_token"]]
        cfg = isolated_env / "config" / "config.toml"
        cfg.parent.mkdir(parents=True, exist_ok=True)
        cfg.write_text(f'mcp_defer_tools = false\n[mcp_servers.remote]\nurl = "{base}/mcp"\n')
        write_script(
            project / "s.jsonl",
            # one turn: both calls are gated before any (untrusted) MCP result arrives
            [
                calls(("mcp__remote__leak_tokens", {}, "c1"), ("mcp__remote__admin_report", {}, "c2")),
                say("done"),
            ],
        )
        env = {
            "PYTHON_KEYRING_BACKEND": "tests.mcp_keyring.FileKeyring",
            "MERMAID_TEST_KEYRING_FILE": str(tmp_path / "keyring.json"),
            "PYTHONPATH": str(ROOT),
        }
        out = run_mermaid(
            ["exec", "--json", "--safety", "full_access", "--model", "replay/s.jsonl", "go"], project, env=env
        )
        assert out.code == 0, out.stderr
        finished = {e["name"]: e for e in out.events if e["type"] == "tool_finished"}
        assert "access=[REDACTED] refresh=[REDACTED]" in finished["mcp__remote__leak_tokens"]["output"]
        assert finished["mcp__remote__admin_report"]["status"] != "success"
        assert "scopes: mcp admin" in json.dumps(
            finished["mcp__remote__admin_report"]
        ) and "mermaid mcp login remote" in json.dumps(finished["mcp__remote__admin_report"])
        assert stats(base)["insufficient_scope"] == 1 and stats(base)["authorized"] == 1
        written = [p for root in (project, isolated_env / "data") for p in root.rglob("*") if p.is_file()]
        assert written
        for token in tokens:
            assert token not in out.stdout and token not in out.stderr
            for path in written:
                assert token not in path.read_text(errors="replace"), path
    finally:
        stop(proc)


def test_add_writes_the_metadata_document_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tomllib

    from click.testing import CliRunner

    from mermaid_cli.cli.mcp import mcp_group

    monkeypatch.setenv("MERMAID_CONFIG_DIR", str(tmp_path / "cfg"))
    url = "https://ci.example.com/mermaid/client.json"
    ok = CliRunner().invoke(
        mcp_group, ["add", "r", "--url", "https://mcp.example.com/mcp", "--client-metadata-url", url]
    )
    assert ok.exit_code == 0, ok.output
    data = tomllib.loads((tmp_path / "cfg" / "config.toml").read_text())
    assert data["mcp_servers"]["r"]["oauth"] == {"client_metadata_url": url}
    bad = CliRunner().invoke(
        mcp_group,
        ["add", "b", "--url", "https://mcp.example.com/mcp", "--client-metadata-url", "http://x.example/c"],
    )
    assert bad.exit_code == 2 and "client_metadata_url" in bad.output
