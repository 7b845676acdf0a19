"""`[tools] enabled` / `disabled` / `categories` through real runs, and `mermaid tools list`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner
from conftest import call, run_inprocess, run_mermaid, say, write_script

from mermaid_cli.cli.main import cli

SERVERS = Path(__file__).parent / "mcp_servers"


def _finished(out, name):
    return [e for e in out.events if e["type"] == "tool_finished" and e["name"] == name]


def test_disabled_group_registers_no_tools_and_a_call_gets_the_reason(project):
    script = write_script(
        project / "s.jsonl", [call("task_create", {"tasks": [{"subject": "x"}]}), say("ok")]
    )
    out = run_inprocess(
        ["--json", "-c", 'tools.disabled=["tasks", "compact_context"]', "--model", f"replay/{script}", "go"],
        project,
    )
    assert out.code == 0, out.stderr
    tools = out.events[0]["tools"]
    assert not {"task_create", "task_update", "task_list", "compact_context"} & set(tools)
    assert "read_file" in tools and "context_archive" in tools
    result = _finished(out, "task_create")[0]
    assert result["status"] == "error" and "[tools] disabled" in result["output"]


def test_enabled_is_an_allow_list(project):
    script = write_script(project / "s.jsonl", [call("grep", {"pattern": "x"}), say("ok")])
    out = run_inprocess(
        ["--json", "-c", 'tools.enabled=["read_file", "search"]', "--model", f"replay/{script}", "go"],
        project,
    )
    assert out.code == 0, out.stderr
    assert out.events[0]["tools"] == ["read_file", "glob", "grep"]
    assert _finished(out, "grep")[0]["status"] == "success"
    blocked = write_script(
        project / "b.jsonl", [call("write_file", {"path": "a", "content": "b"}), say("ok")]
    )
    out = run_inprocess(
        ["--json", "-c", 'tools.enabled=["read_file"]', "--model", f"replay/{blocked}", "go"], project
    )
    assert "[tools] enabled" in _finished(out, "write_file")[0]["output"]
    assert not (project / "a").exists()


def test_category_override_is_what_the_gate_judges(project):
    (project / "f.txt").write_text("hello\n")
    script = write_script(project / "s.jsonl", [call("glob", {"pattern": "*.txt"}), say("ok")])
    plain = run_inprocess(["--json", "--safety", "read_only", "--model", f"replay/{script}", "go"], project)
    assert _finished(plain, "glob")[0]["status"] == "success"
    moved = run_inprocess(
        [
            "--json",
            "--safety",
            "read_only",
            "-c",
            'tools.categories={glob="edit"}',
            "--model",
            f"replay/{script}",
            "go",
        ],
        project,
    )
    finished = _finished(moved, "glob")[0]
    assert finished["status"] == "error" and finished["decision"]["verdict"] == "deny"


def test_project_config_may_not_set_categories(project):
    (project / ".mermaid").mkdir()
    (project / ".mermaid" / "config.toml").write_text('[tools]\ncategories = {execute_command = "read"}\n')
    script = write_script(project / "s.jsonl", [say("ok")])
    out = run_inprocess(["--json", "--model", f"replay/{script}", "go"], project)
    assert out.code == 0
    assert "`tools.categories` is ignored in a project config" in out.stderr


def _mcp_config(isolated_env, extra: str = "") -> None:
    cfg = isolated_env / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(
        f"mcp_defer_tools = false\n{extra}"
        f'[mcp_servers.basic]\ncommand = "{sys.executable}"\nargs = ["{SERVERS / "basic.py"}"]\n'
    )


def test_mcp_tools_pass_the_filters_too(project, isolated_env):
    _mcp_config(isolated_env, '[tools]\ndisabled = ["mcp__basic__add"]\n')
    write_script(project / "s.jsonl", [call("mcp__basic__add", {"a": 1, "b": 2}), say("done")])
    out = run_mermaid(
        ["exec", "--json", "--safety", "full_access", "--model", "replay/s.jsonl", "go"], project
    )
    assert out.code == 0, out.stderr
    tools = out.events[0]["tools"]
    assert "mcp__basic__echo" in tools and "mcp__basic__add" not in tools
    assert "[tools] disabled" in _finished(out, "mcp__basic__add")[0]["output"]


def test_a_recategorized_mcp_tool_still_marks_untrusted_content(project, isolated_env):
    _mcp_config(isolated_env, '[tools]\ncategories = { mcp__basic__echo = "read" }\n')
    write_script(project / "s.jsonl", [call("mcp__basic__echo", {"text": "hi"}), say("done")])
    out = run_mermaid(["exec", "--json", "--model", "replay/s.jsonl", "go"], project)
    assert out.code == 0, out.stderr
    assert _finished(out, "mcp__basic__echo")[0]["decision"]["reason"] == "in-project read"
    assert out.events[-1]["untrusted_content"] is True


def test_tools_list_shows_builtin_and_mcp_tools(project, isolated_env, monkeypatch):
    _mcp_config(
        isolated_env, '[tools]\ndisabled = ["mcp__basic__add", "tasks"]\ncategories = {glob = "edit"}\n'
    )
    result = CliRunner().invoke(cli, ["tools", "list", "--json", "--safety", "read_only", "-p", str(project)])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows["read_file"]["status"] == "offered" and rows["read_file"]["decision"] == "allow"
    assert rows["write_file"]["decision"] == "deny"  # read_only
    assert rows["glob"]["category"] == "edit" and rows["glob"]["decision"] == "deny"
    assert rows["task_create"]["status"] == "disabled"
    assert rows["computer"]["status"] == "absent" and "[tools] computer" in rows["computer"]["detail"]
    assert rows["ask_user_question"]["status"] == "absent"
    assert (
        rows["mcp__basic__echo"]["source"] == "mcp:basic" and rows["mcp__basic__echo"]["status"] == "offered"
    )
    assert rows["mcp__basic__add"]["status"] == "disabled"
    assert rows["render_image"]["status"] == "absent" and "--model" in rows["render_image"]["detail"]
    vision = CliRunner().invoke(
        cli, ["tools", "list", "--json", "--no-mcp", "-m", "anthropic/claude-sonnet-4-5", "-p", str(project)]
    )
    assert {r["name"]: r for r in json.loads(vision.stdout)}["render_image"]["status"] == "offered"
    text = CliRunner().invoke(cli, ["tools", "list", "--no-mcp", "-p", str(project)])
    assert text.exit_code == 0 and "execute_command" in text.output and "mcp__basic" not in text.output
