"""The loop's own `scratchpad` and `background` parameters, through real scripted runs."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import call, run_inprocess, run_mermaid, say, write_script

SERVERS = Path(__file__).parent / "mcp_servers"


def _finished(out, name=None):
    return [e for e in out.events if e["type"] == "tool_finished" and (name is None or e["name"] == name)]


def test_scratchpad_saves_the_output_and_lifts_the_grep_and_glob_caps(project):
    for i in range(300):
        (project / f"f{i:03}.txt").write_text("needle\n")
    script = write_script(
        project / "s.jsonl",
        [
            call("grep", {"pattern": "needle"}, "c1"),
            call("grep", {"pattern": "needle", "scratchpad": "hits"}, "c2"),
            call("scratchpad_read", {"name": "hits"}, "c3"),
            call("glob", {"pattern": "*.txt", "scratchpad": "paths"}, "c4"),
            call("scratchpad_read", {"name": "paths", "offset": 0, "length": 30000}, "c5"),
            call("scratchpad_read", {}, "c6"),
            say("ok"),
        ],
    )
    out = run_inprocess(["--json", "--model", f"replay/{script}", "find"], project)
    assert out.code == 0, out.stderr
    plain, saved, read, globbed, paths, listing = _finished(out)
    assert "capped at 200 matches" in plain["output"]
    assert (
        "Saved the output to scratchpad entry 'hits'" in saved["output"] and "needle" not in saved["output"]
    )
    assert "f299.txt:1: needle" in read["output"] and "capped" not in read["output"]
    assert read["output"].count(": needle") == 300
    assert "scratchpad entry 'paths'" in globbed["output"]
    assert "f299.txt" in paths["output"] and "capped" not in paths["output"]
    assert "hits (" in listing["output"] and "paths (" in listing["output"]
    # the tool never saw the parameter: no "invalid arguments" for grep's strict schema
    assert not any(e["status"] == "error" for e in _finished(out))


def test_wrong_types_refuse_the_call_with_the_expected_type(project):
    script = write_script(
        project / "s.jsonl",
        [
            call("read_file", {"path": "x", "scratchpad": 5}, "c1"),
            call("read_file", {"path": "x", "background": "yes"}, "c2"),
            call("read_file", {"path": "x", "scratchpad": "bad name!"}, "c3"),
            call("glob", {"pattern": "*", "scratchpad": None, "background": None}, "c4"),
            say("ok"),
        ],
    )
    (project / "x").write_text("hi\n")
    out = run_inprocess(["--json", "--model", f"replay/{script}", "go"], project)
    one, two, three, four = _finished(out)
    assert one["status"] == "error" and "scratchpad must be a string" in one["output"]
    assert two["status"] == "error" and "background must be a boolean" in two["output"]
    assert three["status"] == "error" and "scratchpad name 'bad name!'" in three["output"]
    assert four["status"] == "success"  # null counts as absent


def test_scratchpad_save_file_is_gated_as_a_write(project):
    script = write_script(
        project / "s.jsonl",
        [
            call("execute_command", {"command": "seq 1 5", "scratchpad": "nums"}, "c1"),
            call("scratchpad_save_file", {"name": "nums", "path": "out/nums.txt"}, "c2"),
            say("ok"),
        ],
    )
    out = run_inprocess(["--json", "--model", f"replay/{script}", "save"], project)
    assert out.code == 0, out.stderr
    assert (project / "out" / "nums.txt").read_text().startswith("1\n2\n3\n4\n5\n")
    saved = _finished(out, "scratchpad_save_file")[0]
    assert saved["status"] == "success" and "out/nums.txt" in out.events[-1]["files_changed"]
    started = [e for e in out.events if e["type"] == "tool_started" and e["name"] == "scratchpad_save_file"][
        0
    ]
    assert started["targets"][0]["operation"] == "create"

    (project / "out" / "nums.txt").unlink()
    denied = run_inprocess(
        ["--json", "--safety", "read_only", "--model", f"replay/{script}", "save"], project
    )
    refused = _finished(denied, "scratchpad_save_file")[0]
    assert refused["status"] == "error" and refused["decision"]["verdict"] == "deny"
    assert not (project / "out" / "nums.txt").exists()


def test_background_call_returns_a_task_id_and_the_result_arrives_as_its_own_turn(project):
    script = write_script(
        project / "s.jsonl",
        [
            call("execute_command", {"command": "sleep 0.3; echo built-ok", "background": True}, "c1"),
            say("Waiting for the build."),
            say("The build printed built-ok."),
        ],
    )
    out = run_inprocess(["--json", "--model", f"replay/{script}", "build"], project)
    assert out.code == 0, out.stderr
    first = [e for e in _finished(out, "execute_command") if e["call_id"] == "tool#1"][0]
    assert "in the background as task-1" in first["output"]
    late = [e for e in _finished(out, "execute_command") if e["call_id"] == "tool#1/task-1"][0]
    assert late["status"] == "success" and "built-ok" in late["output"]
    assert out.events[-1]["response"] == "The build printed built-ok."
    assert out.events[-1]["num_turns"] == 3
    sid = out.events[0]["session_id"]
    log = (project / ".mermaid/conversations" / f"{sid}.jsonl").read_text()
    assert "[background task-1: execute_command (call c1) finished]" in log


def test_background_calls_still_running_are_cancelled_at_the_end(project):
    script = write_script(
        project / "s.jsonl",
        [call("execute_command", {"command": "sleep 30", "background": True}, "c1"), say("never")],
    )
    out = run_inprocess(["--json", "--max-turns", "1", "--model", f"replay/{script}", "go"], project)
    assert out.code == 4
    cancelled = [e for e in _finished(out) if e["call_id"] == "tool#1/task-1"][0]
    assert cancelled["status"] == "cancelled" and "run ended before it finished" in cancelled["summary"]
    assert out.events[-1]["type"] == "result"


def _options_server(isolated_env) -> None:
    cfg = isolated_env / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(
        f"mcp_defer_tools = false\n"
        f'[mcp_servers.opt]\ncommand = "{sys.executable}"\nargs = ["{SERVERS / "options.py"}"]\n'
    )


def test_mcp_tools_take_the_options_and_keep_their_own_background(project, isolated_env):
    _options_server(isolated_env)
    write_script(
        project / "s.jsonl",
        [
            call("mcp__opt__paint", {"color": "red", "background": "blue"}, "c1"),
            call("mcp__opt__keys", {"text": "hi", "scratchpad": "k"}, "c2"),
            call("scratchpad_read", {"name": "k"}, "c3"),
            say("done"),
        ],
    )
    read = 'tools.categories={mcp__opt__paint="read", mcp__opt__keys="read"}'  # no reviewer turns
    args = ["exec", "--json", "-c", read]
    out = run_mermaid([*args, "--model", "replay/s.jsonl", "go"], project)
    assert out.code == 0, out.stderr
    paint, keys, read = _finished(out)
    assert paint["status"] == "success" and "red on blue" in paint["output"]  # not detached
    assert keys["status"] == "success" and "scratchpad entry 'k'" in keys["output"]
    assert "received text='hi'" in read["output"]


def test_every_tool_advertises_the_options_unless_it_has_its_own():
    from mermaid_cli.core.types import ToolSpec
    from mermaid_cli.tools.base import ToolRegistry
    from mermaid_cli.tools.call_options import advertise
    from mermaid_cli.tools.search import Glob

    (spec,) = ToolRegistry([Glob()]).specs()
    assert spec.input_schema["properties"]["scratchpad"]["type"] == "string"
    assert spec.input_schema["properties"]["background"]["type"] == "boolean"
    own = {"type": "object", "properties": {"background": {"type": "string", "description": "colour"}}}
    kept = advertise(ToolSpec(name="paint", description="", input_schema=own))
    assert kept.input_schema["properties"]["background"] == {"type": "string", "description": "colour"}
    assert "scratchpad" in kept.input_schema["properties"]


def test_schemas_leave_out_additional_properties_and_unknown_arguments_are_still_refused():
    """`additionalProperties: false` was ~600 bytes of every request; the Args models still refuse
    an argument they do not define, with an error naming it."""
    import json
    import os

    from mermaid_cli.config.loader import Settings
    from mermaid_cli.core.types import ToolCallBlock
    from mermaid_cli.run.assemble import build_registry

    registry = build_registry(Settings(), os.environ, interactive=False)
    assert "additionalProperties" not in json.dumps([s.input_schema for s in registry.specs()])
    refused = registry.bind(ToolCallBlock(id="c1", name="glob", arguments={"pattern": "*", "bogus": 1}))
    assert not isinstance(refused, tuple) and refused.is_error and "bogus" in refused.content
