"""Deferred MCP tools through real runs: `load_tool`, `eager_load_tools`, and the once-per-tool
note naming the documented parameters an unloaded call did not pass."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import call, run_mermaid, say, write_script

SERVERS = Path(__file__).parent / "mcp_servers"
READ = 'tools.categories={mcp__opt__search="read", mcp__opt__keys="read", mcp__opt__paint="read"}'


def _config(isolated_env, extra: str = "") -> None:
    cfg = isolated_env / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(
        f'[mcp_servers.opt]\ncommand = "{sys.executable}"\nargs = ["{SERVERS / "options.py"}"]\n{extra}'
    )


def _finished(out, name):
    return [e for e in out.events if e["type"] == "tool_finished" and e["name"] == name]


def test_unloaded_call_works_and_names_unpassed_parameters_once(project, isolated_env):
    _config(isolated_env, 'eager_load_tools = ["paint"]\n')
    write_script(
        project / "s.jsonl",
        [
            call("mcp__opt__search", {"query": "cats"}, "c1"),
            call("mcp__opt__search", {"query": "dogs"}, "c2"),
            call("load_tool", {"name": ["mcp__opt__keys", "mcp__opt__nope"]}, "c3"),
            call("mcp__opt__keys", {"text": "hi"}, "c4"),
            call("load_tool", {"name": "mcp__opt__missing"}, "c5"),
            say("done"),
        ],
    )
    out = run_mermaid(["exec", "--json", "-c", READ, "--model", "replay/s.jsonl", "go"], project)
    assert out.code == 0, out.stderr
    tools = out.events[0]["tools"]
    assert {"tool_search", "load_tool", "mcp__opt__paint"} <= set(tools)  # paint is eager
    assert "mcp__opt__search" not in tools and "mcp__opt__keys" not in tools
    first, second = _finished(out, "mcp__opt__search")
    assert first["status"] == "success" and "10 results for cats" in first["output"]
    assert "called without loading its schema" in first["output"]
    assert "limit (integer, default 10)" in first["output"]
    assert "include_archived (boolean, default false)" in first["output"]
    assert "query (" not in first["output"]  # it was passed
    assert "without loading" not in second["output"]  # once per tool per run
    loaded, missing = _finished(out, "load_tool")
    assert loaded["status"] == "success" and "Loaded 1 tool(s)" in loaded["output"]
    assert "No MCP tool named: mcp__opt__nope" in loaded["output"]
    assert missing["status"] == "error"
    (keys,) = _finished(out, "mcp__opt__keys")
    assert keys["status"] == "success" and "without loading" not in keys["output"]  # it was loaded


def test_load_tool_takes_at_most_ten(project, isolated_env):
    _config(isolated_env)
    write_script(
        project / "s.jsonl", [call("load_tool", {"name": [f"mcp__opt__t{i}" for i in range(11)]}), say("ok")]
    )
    out = run_mermaid(["exec", "--json", "--model", "replay/s.jsonl", "go"], project)
    (result,) = _finished(out, "load_tool")
    assert result["status"] == "error" and "give 1-10 tool names" in result["output"]
