"""Lifecycle hook events from config hooks in real runs: each fires once with the documented
payload, in a cleared environment; a failing observer is a warning and changes nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import call, run_inprocess, say, write_script

from mermaid_cli.config.sections.hooks import LIFECYCLE_EVENTS

OBSERVER = """
import json, os, sys
payload = json.load(sys.stdin)
with open(sys.argv[1], "a") as fh:
    fh.write(json.dumps({"env": os.environ.get("MERMAID_HOOK_EVENT"), "secret": "SUPER_SECRET_TOKEN" in os.environ,
                         "payload": payload}) + "\\n")
"""


def _config(isolated_env, body: str) -> None:
    cfg = isolated_env / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(body)


def _observe_all(isolated_env, tmp_path: Path) -> Path:
    script = tmp_path / "observer.py"
    script.write_text(OBSERVER)
    log = tmp_path / "events.jsonl"
    tables = "".join(
        f'[[hooks.{event}]]\ncommand = "{sys.executable} {script} {log}"\n' for event in LIFECYCLE_EVENTS
    )
    _config(
        isolated_env,
        '[safety]\nmode = "ask"\n[[safety.overrides]]\ntool = "write_file"\ndecision = "allow"\n' + tables,
    )
    return log


def test_every_lifecycle_event_fires_once_with_its_payload(project, isolated_env, tmp_path, monkeypatch):
    monkeypatch.setenv("SUPER_SECRET_TOKEN", "hunter2hunter2")
    log = _observe_all(isolated_env, tmp_path)
    (project / "a.txt").write_text("old\n")
    script = write_script(
        project / "s.jsonl",
        [
            call("write_file", {"path": "a.txt", "content": "new\n"}, "c1"),  # allowed: checkpoint
            call("execute_command", {"command": "touch b.txt"}, "c2"),  # ask, headless: blocked
            say("stopped"),
        ],
    )
    out = run_inprocess(["--json", "--model", f"replay/{script}", "edit a.txt"], project)
    assert out.code == 3, out.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()]
    events = [r["payload"]["event"] for r in records]
    for event in ("session_start", "checkpoint", "approval_requested", "session_end"):
        assert events.count(event) == 1, events
    assert events[0] == "session_start" and events[-1] == "session_end"
    assert events.count("after_tool_use") == 2
    assert events.count("turn_done") == sum(1 for e in out.events if e["type"] == "turn_done")
    assert all(r["env"] == r["payload"]["event"] and r["secret"] is False for r in records)
    assert "hunter2hunter2" not in log.read_text()
    by = {r["payload"]["event"]: r["payload"] for r in records}
    sid = out.events[0]["session_id"]
    assert all(r["payload"]["session_id"] == sid for r in records)
    assert by["session_start"] == {
        "event": "session_start",
        "session_id": sid,
        "model": out.events[0]["model"],
        "project_path": str(project.resolve()),
        "safety_mode": "ask",
        "plugins": [],
        "skills": 0,
    }
    after = [r["payload"] for r in records if r["payload"]["event"] == "after_tool_use"]
    assert [(a["tool"], a["status"]) for a in after] == [
        ("write_file", "success"),
        ("execute_command", "error"),
    ]
    assert set(after[0]) == {"event", "session_id", "call_id", "tool", "status", "summary"}
    assert after[0]["call_id"] == "tool#1" and after[0]["summary"]
    assert set(by["turn_done"]) == {"event", "session_id", "turn", "total_tokens", "stop_reason"}
    assert (
        by["approval_requested"]["tool"] == "execute_command"
        and by["approval_requested"]["call_id"] == "tool#2"
    )
    assert by["approval_requested"]["risk"]
    checkpoint = by["checkpoint"]
    assert checkpoint["files"] == [str((project / "a.txt").resolve())] and checkpoint["id"]
    assert checkpoint["project_path"] == str(project.resolve())
    end = by["session_end"]
    assert (end["status"], end["exit_code"]) == ("blocked", 3) and end["report"] == out.events[-1]["response"]


def test_a_failing_observer_is_a_warning(project, isolated_env):
    _config(
        isolated_env,
        '[[hooks.session_start]]\ncommand = "echo broken >&2; exit 1"\n'
        '[[hooks.turn_done]]\ncommand = "exit 2"\n',
    )
    script = write_script(project / "s.jsonl", [say("fine")])
    out = run_inprocess(["--json", "--model", f"replay/{script}", "hi"], project)
    assert out.code == 0 and out.events[-1]["status"] == "success"
    assert "warning: hook: session_start hook echo: exited with status 1: broken\n" in out.stderr
    assert "turn_done hook exit: exited with status 2 (observers cannot deny)" in out.stderr


def test_no_observers_no_worker(project):
    script = write_script(project / "s.jsonl", [say("fine")])
    out = run_inprocess(["--json", "--model", f"replay/{script}", "hi"], project)
    assert out.code == 0 and "hook" not in out.stderr
