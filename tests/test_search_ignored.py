"""glob/grep `includeIgnored`, node_modules and .git skipped unless asked, through real runs with
both grep backends; and `list_mcp_resources` answering with the documented JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import call, run_inprocess, run_mermaid, say, write_script

SERVERS = Path(__file__).parent / "mcp_servers"


@pytest.fixture
def tree(project):
    (project / ".gitignore").write_text("build/\n")
    for rel in (
        "src/a.js",
        "build/out.js",
        "node_modules/lib/index.js",
        "pkg/node_modules/x.js",
        ".git/hooks.js",
    ):
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("marker\n")
    return project


def _outputs(out, name):
    return [e["output"] for e in out.events if e["type"] == "tool_finished" and e["name"] == name]


@pytest.mark.parametrize("backend", ["rg", "python"])
def test_include_ignored_and_always_skipped_dirs(tree, backend, monkeypatch):
    if backend == "python":
        monkeypatch.setenv("PATH", "/nonexistent")  # no rg: the Python walker answers
    script = write_script(
        tree / "s.jsonl",
        [
            call("glob", {"pattern": "*.js"}, "c1"),
            call("glob", {"pattern": "*.js", "includeIgnored": True}, "c2"),
            call("grep", {"pattern": "marker", "include": "*.js"}, "c3"),
            call("grep", {"pattern": "marker", "include": "*.js", "includeIgnored": True}, "c4"),
            call("glob", {"pattern": "node_modules/**/*.js"}, "c5"),
            call("grep", {"pattern": "marker", "include": "*.js", "include_ignored": True}, "c6"),
            say("ok"),
        ],
    )
    out = run_inprocess(["--json", "--model", f"replay/{script}", "find"], tree)
    assert out.code == 0, out.stderr
    plain, everything, explicit = _outputs(out, "glob")
    assert plain.splitlines() == ["src/a.js"]
    assert everything.splitlines() == [
        "build/out.js",
        "node_modules/lib/index.js",
        "pkg/node_modules/x.js",
        "src/a.js",
    ]
    assert explicit.splitlines() == ["node_modules/lib/index.js"]
    grep_plain, grep_all, snake = _outputs(out, "grep")
    assert grep_plain.splitlines() == ["src/a.js:1: marker"]
    assert [line.split(":")[0] for line in grep_all.splitlines()] == [
        "build/out.js",
        "node_modules/lib/index.js",
        "pkg/node_modules/x.js",
        "src/a.js",
    ]
    assert snake == grep_all  # the snake_case spelling is accepted too
    assert ".git" not in everything + grep_all


def test_list_mcp_resources_returns_json(project, isolated_env):
    cfg = isolated_env / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(f'[mcp_servers.notes]\ncommand = "{sys.executable}"\nargs = ["{SERVERS / "rich.py"}"]\n')
    write_script(project / "s.jsonl", [call("list_mcp_resources", {}), say("ok")])
    out = run_mermaid(
        ["exec", "--json", "--safety", "full_access", "--model", "replay/s.jsonl", "go"], project
    )
    assert out.code == 0, out.stderr
    (listing,) = _outputs(out, "list_mcp_resources")
    entries = json.loads(listing)
    readme = next(e for e in entries if e.get("uri") == "notes://readme")
    assert readme == {
        "server": "notes",
        "uri": "notes://readme",
        "name": "readme",
        "description": "The readme",
        "mimeType": "text/plain",
    }
