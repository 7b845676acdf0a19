"""The acme fixture plugin (fixtures/plugins/acme) end to end: installed and enabled with the CLI,
then one scripted run against the fake provider uses all five asset kinds: its prompt command
expands, its skill is in the index and loads, its MCP server's tool is called, its hook denies a
call and sees every lifecycle event, and its agent type is offered to the agent tool's table."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from conftest import FIXTURES, run_mermaid
from provider_fixtures import FakeProviderServer, fake_env

ACME = FIXTURES / "plugins" / "acme"


def _turn(*content: dict, stop: str = "tool_use") -> dict:
    return {
        "type": "turn",
        "content": list(content),
        "stop_reason": stop,
        "usage": {"input_tokens": 50, "output_tokens": 5},
    }


def _call(cid: str, name: str, args: dict) -> dict:
    return {"type": "tool_call", "id": cid, "name": name, "arguments": args}


SCRIPT = [
    _turn(_call("c1", "skill", {"name": "release-notes"})),
    _turn(_call("c2", "mcp__acme__shout", {"text": "hi"})),
    _turn(_call("c3", "write_file", {"path": "forbidden.txt", "content": "x"})),
    _turn({"type": "text", "text": "Deployed."}, stop="stop"),
]


def install_acme(env: dict[str, str], cwd: Path) -> None:
    installed = run_mermaid(["plugin", "install", str(ACME)], cwd, env=env)
    assert installed.code == 0, installed.stderr
    assert "installed" in installed.stdout and "acme" in installed.stdout
    listed = run_mermaid(["plugin", "list"], cwd, env=env)
    assert "acme 1.2.0 disabled" in listed.stdout
    enabled = run_mermaid(["plugin", "enable", "acme"], cwd, env=env)
    assert enabled.code == 0, enabled.stderr
    assert "run 1 hook executable" in enabled.stdout and "start the MCP servers" in enabled.stdout


def test_all_five_asset_kinds_in_one_run(project, isolated_env):
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    install_acme(env, project)
    (isolated_env / "config").mkdir(parents=True, exist_ok=True)
    (isolated_env / "config" / "config.toml").write_text("mcp_defer_tools = false\n")
    with FakeProviderServer(SCRIPT) as server:
        out = run_mermaid(
            [
                "exec",
                "--json",
                "--safety",
                "full_access",
                "--model",
                "anthropic/claude-sonnet-4-5",
                "/deploy prod",
            ],
            project,
            env={**fake_env(server), **env},
        )
        requests = [json.dumps(r["body"]) for r in server.requests]
    assert out.code == 0, out.stderr
    started = out.events[0]
    assert started["plugins"] == ["acme"] and started["skills"] == 1
    assert {"skill", "skill_search", "mcp__acme__shout"} <= set(started["tools"])
    # the prompt command expanded before the run: the model and the session got the expansion
    assert "Deploy the current branch to prod. Write release notes first" in requests[0]
    assert "/deploy prod" not in requests[0]
    session = next((project / ".mermaid" / "conversations").glob("*.jsonl")).read_text()
    assert "Deploy the current branch to prod." in session
    # the skill index is in the system prompt; the skill loads with the skill tool
    assert (
        "release-notes: Write release notes from the changelog since the last tag (plugin:acme" in requests[0]
    )
    finished = {e["call_id"]: e for e in out.events if e["type"] == "tool_finished"}
    assert finished["tool#1"]["status"] == "success" and "Group the entries" in finished["tool#1"]["output"]
    # the plugin's MCP server (a ./ command inside the plugin) answered
    assert finished["tool#2"]["status"] == "success" and "HI!" in finished["tool#2"]["output"]
    # the plugin's hook denied the write
    assert finished["tool#3"]["status"] == "error" and finished["tool#3"]["decision"]["by"] == "hook"
    assert "forbidden.txt is off limits" in finished["tool#3"]["output"]
    assert not (project / "forbidden.txt").exists()
    # every hook event reached the plugin's hook, the lifecycle ones with their payloads
    log = (isolated_env / "data" / "plugins" / "acme" / "events.log").read_text().splitlines()
    seen = [line.split("\t", 1) for line in log]
    names = [name for name, _ in seen]
    assert names.count("session_start") == 1 and names.count("session_end") == 1
    assert names.count("before_tool_use") == 3 and names.count("after_tool_use") == 3
    assert names.count("turn_done") == 4
    payloads = {name: json.loads(body) for name, body in seen if name != "before_tool_use"}
    assert payloads["session_start"]["plugins"] == ["acme"] and payloads["session_start"]["skills"] == 1
    assert payloads["session_end"]["status"] == "success" and payloads["session_end"]["exit_code"] == 0
    assert payloads["session_end"]["report"] == "Deployed."
    after = [json.loads(body) for name, body in seen if name == "after_tool_use"]
    assert [(a["call_id"], a["tool"], a["status"]) for a in after] == [
        ("tool#1", "skill", "success"),
        ("tool#2", "mcp__acme__shout", "success"),
        ("tool#3", "write_file", "error"),
    ]


def test_plugin_agent_types_reach_the_type_table(project, isolated_env):
    install_acme({}, project)
    from mermaid_cli.config.loader import load_settings
    from mermaid_cli.extensions.session import plugin_agent_types

    settings = load_settings(project_root=project).settings
    types, warnings = plugin_agent_types(settings, os.environ)
    assert warnings == []
    [checker] = types
    assert (checker.name, checker.plugin, checker.safety) == ("release-checker", "acme", "read_only")
    assert checker.tools == ["read_file", "execute_command"]


def test_disabled_plugin_contributes_nothing(project, isolated_env):
    assert run_mermaid(["plugin", "install", str(ACME)], project).code == 0
    script = project / "s.jsonl"
    script.write_text('{"type":"turn","content":[{"type":"text","text":"ok"}],"stop_reason":"stop"}\n')
    out = run_mermaid(["exec", "--json", "--model", "replay/s.jsonl", "/deploy prod"], project)
    assert out.code == 0, out.stderr
    assert out.events[0]["plugins"] == [] and out.events[0]["skills"] == 0
    assert "/deploy is not a known prompt command; the prompt is sent as written" in out.stderr


def test_a_plugin_agent_type_is_spawned_under_its_ceiling(project, isolated_env):
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    install_acme(env, project)
    script = [
        _turn(
            _call(
                "p1",
                "agent",
                {
                    "prompt": "Check the branch; write notes.txt.",
                    "description": "check",
                    "type": "release-checker",
                },
            )
        ),
        _turn(_call("k1", "write_file", {"path": "notes.txt", "content": "x"})),  # not offered to the type
        _turn({"type": "text", "text": "Checked; could not write."}, stop="stop"),
        _turn({"type": "text", "text": "Done."}, stop="stop"),
    ]
    with FakeProviderServer(script) as server:
        out = run_mermaid(
            [
                "exec",
                "--json",
                "--safety",
                "full_access",
                "--model",
                "anthropic/claude-sonnet-4-5",
                "check the release",
            ],
            project,
            env={**env, **fake_env(server)},
        )
        requests = server.requests
    assert out.code == 0, out.stderr
    started = next(e for e in out.events if e["type"] == "agent_started")
    assert started["agent_type"] == "release-checker"
    assert not (project / "notes.txt").exists()
    child_tools = {t["name"] for t in requests[1]["body"]["tools"]}
    # the type's tools only (`bash` is execute_command in Anthropic's native form)
    assert child_tools <= {"read_file", "execute_command", "bash"} and "write_file" not in child_tools
    assert "You check release branches." in json.dumps(requests[1]["body"])
    # the agent tool's description lists the plugin's type
    parent_agent = next(t for t in requests[0]["body"]["tools"] if t["name"] == "agent")
    assert "release-checker" in json.dumps(parent_agent)


def test_a_run_with_no_extensions_imports_none_of_their_machinery(project, isolated_env):
    """No plugin, skill or command directory, no lifecycle hook: the extension modules stay
    unimported (they are off the path to the first request), and `/name` still gets its warning."""
    script = project / "s.jsonl"
    script.write_text('{"type":"turn","content":[{"type":"text","text":"ok"}],"stop_reason":"stop"}\n')
    probe = (
        "import json, os, sys\n"
        "real_exit = os._exit\n"
        "def report(code):\n"
        "    loaded = sorted(m for m in sys.modules if m.startswith('mermaid_cli.extensions'))\n"
        "    sys.stderr.write('PROBE ' + json.dumps([code, loaded]) + '\\n'); sys.stderr.flush()\n"
        "    real_exit(code)\n"
        "os._exit = report\n"
        "from mermaid_cli.cli.main import main\n"
        "sys.argv = ['mermaid', 'exec', '--json', '--model', 'replay/s.jsonl', '/deploy prod']\n"
        "main()\n"
    )
    import subprocess

    proc = subprocess.run([sys.executable, "-c", probe], cwd=project, capture_output=True, text=True)
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("PROBE ")]
    code, loaded = json.loads(line.removeprefix("PROBE "))
    assert code == 0, proc.stderr
    assert set(loaded) <= {
        "mermaid_cli.extensions",
        "mermaid_cli.extensions.session",
        "mermaid_cli.extensions.locations",
        "mermaid_cli.extensions.commands",  # the `/deploy` warning comes from the command table
        "mermaid_cli.extensions.frontmatter",
    }, loaded
    assert "mermaid_cli.extensions.manifest" not in loaded
    assert "/deploy is not a known prompt command; the prompt is sent as written" in proc.stderr
