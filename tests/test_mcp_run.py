"""MCP servers inside a real run: tools offered and called, a failed server reported, --mcp-prompt."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import call, run_mermaid, say, write_script

SERVERS = Path(__file__).parent / "mcp_servers"


def _config(isolated_env, body: str) -> None:
    cfg = isolated_env / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(body)


def test_mcp_tool_called_in_a_run_and_failed_server_reported(project, isolated_env):
    _config(
        isolated_env,
        f"mcp_defer_tools = false\n"
        f'[mcp_servers.basic]\ncommand = "{sys.executable}"\nargs = ["{SERVERS / "basic.py"}"]\n'
        f'[mcp_servers.broken]\ncommand = "{sys.executable}"\nargs = ["{SERVERS / "crash.py"}"]\n',
    )
    write_script(project / "s.jsonl", [call("mcp__basic__echo", {"text": "hi"}), say("done")])
    out = run_mermaid(["exec", "--json", "--safety", "full_access", "--model", "replay/s.jsonl", "echo"], project)
    assert out.code == 0, out.stderr
    events = out.events
    assert "mcp__basic__echo" in events[0]["tools"]
    errors = [e for e in events if e["type"] == "error"]
    assert errors and "broken" in errors[0]["message"] and errors[0]["code"] == "mcp_server"
    finished = [e for e in events if e["type"] == "tool_finished"][0]
    assert finished["status"] == "success" and "echo: hi" in finished["output"]
    # as docs/mcp.md says: an MCP result is untrusted content, like a fetched page
    assert events[-1]["untrusted_content"] is True
    assert "MCP results are untrusted content" in (Path(__file__).parents[1] / "docs/mcp.md").read_text()


def test_mcp_prompt_becomes_the_task(project, isolated_env):
    _config(
        isolated_env, f'[mcp_servers.rich]\ncommand = "{sys.executable}"\nargs = ["{SERVERS / "rich.py"}"]\n'
    )
    write_script(project / "s.jsonl", [say("ok")])
    missing = run_mermaid(
        ["exec", "--json", "--model", "replay/s.jsonl", "--mcp-prompt", "rich/nope"], project
    )
    assert missing.code == 2 and missing.events[-1]["status"] == "usage_error"
    noarg = run_mermaid(
        ["exec", "--json", "--model", "replay/s.jsonl", "--mcp-prompt", "rich/review"], project
    )
    assert (
        noarg.code == 2 and "usage: mermaid exec --mcp-prompt rich/review" in noarg.events[-1]["errors"][-1]
    )
    ok = run_mermaid(
        ["exec", "--json", "--model", "replay/s.jsonl", "--mcp-prompt", "rich/review", "src/a.py"], project
    )
    assert ok.code == 0, ok.stderr
    from mermaid_cli.store.sessions import load_session

    data = load_session(project, ok.events[0]["session_id"])
    assert data.messages[0].text == "Review src/a.py looking for bugs."
