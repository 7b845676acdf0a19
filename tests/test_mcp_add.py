"""`mermaid add NAME` / `mermaid mcp add NAME`: well-known servers by name, `--command/--arg/--env`
and `--url/--header`; a server added this way serves a real scripted run."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

from conftest import call, run_mermaid, say, write_script

from mermaid_cli.cli.mcp_known import KNOWN_SERVERS
from mermaid_cli.config.sections.mcp import McpServerSettings

SERVERS = Path(__file__).parent / "mcp_servers"


def _servers(isolated_env) -> dict:
    return tomllib.loads((isolated_env / "config" / "config.toml").read_text())["mcp_servers"]


def test_add_with_command_and_args_then_a_run_uses_it(project, isolated_env):
    added = run_mermaid(
        [
            "add",
            "basic",
            "--command",
            sys.executable,
            "--arg",
            str(SERVERS / "basic.py"),
            "--env",
            "LOG=warn",
        ],
        project,
    )
    assert added.code == 0, added.stderr
    assert _servers(isolated_env)["basic"] == {
        "command": sys.executable,
        "args": [str(SERVERS / "basic.py")],
        "env": {"LOG": "warn"},
    }
    write_script(project / "s.jsonl", [call("mcp__basic__echo", {"text": "hi"}), say("done")])
    out = run_mermaid(
        ["exec", "--json", "-c", "mcp_defer_tools=false", "-c", 'tools.categories={mcp__basic__echo="read"}']
        + ["--model", "replay/s.jsonl", "echo"],
        project,
    )
    assert out.code == 0, out.stderr
    finished = [e for e in out.events if e["type"] == "tool_finished"][0]
    assert "echo: hi" in finished["output"]


def test_well_known_names_and_remote_flags(project, isolated_env):
    assert run_mermaid(["mcp", "add", "context7", "--header", "X-Team: core"], project).code == 0
    assert run_mermaid(["add", "fetch"], project).code == 0
    servers = _servers(isolated_env)
    assert servers["context7"] == {"url": "https://mcp.context7.com/mcp", "headers": {"X-Team": "core"}}
    assert servers["fetch"] == {"command": "uvx", "args": ["mcp-server-fetch"]}
    github = run_mermaid(["add", "github"], project)
    assert "needs GITHUB_PERSONAL_ACCESS_TOKEN" in github.stderr
    unknown = run_mermaid(["add", "nonesuch"], project)
    assert unknown.code == 2 and "well-known server (filesystem," in unknown.stderr
    both = run_mermaid(["add", "x", "--command", "a", "--url", "https://e.example/mcp"], project)
    assert both.code == 2
    stray = run_mermaid(["add", "x", "--arg", "a"], project)
    assert stray.code == 2 and "--arg needs --command" in stray.stderr
    listed = json.loads(run_mermaid(["mcp", "known", "--json"], project).stdout)
    assert set(listed) == set(KNOWN_SERVERS)


def test_every_known_server_is_a_valid_config_table():
    for name, known in KNOWN_SERVERS.items():
        assert McpServerSettings.model_validate(known.table).transport in ("stdio", "http"), name
