"""Fuzz of tool arguments (issue 15): NUL bytes, lone surrogates and huge strings in every string
argument of every file and shell tool. Every run ends with a framed `result` and an exit code
other than 70; hostile arguments become error results the model sees, and the next request to a
real (fake-server) provider still serialises."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_inprocess, say, write_script
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_fixtures import FakeProviderServer, fake_env

HOSTILE = ["a\x00b", "a\ud800b", "\udcff\udcfe", "~/\x00/x", "../" * 3000, "\x00", "\ud83d"]
HUGE = "x" * 1_000_000


def calls_for(h: str) -> list[tuple[str, dict[str, Any]]]:
    patch = f"*** Begin Patch\n*** Add File: p{h}.txt\n+{h}\n*** End Patch\n"
    return [
        ("read_file", {"path": h}),
        ("write_file", {"path": f"w{h}.txt", "content": h}),
        ("write_file", {"path": "ok.txt", "content": h}),
        ("edit_file", {"path": h, "target_content": h, "replacement_content": h}),
        ("delete_file", {"path": h}),
        ("create_directory", {"path": f"d/{h}"}),
        ("apply_patch", {"patch": patch}),
        ("apply_patch", {"patch": h}),
        ("execute_command", {"command": f"echo {h}", "working_dir": h}),
        ("execute_command", {"command": f"echo {h}"}),
        ("glob", {"pattern": h}),
        ("grep", {"pattern": h, "path": h}),
    ]


def _turns(calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    turns = []
    for n, (name, args) in enumerate(calls):
        turns.append(
            {
                "content": [{"type": "tool_call", "id": f"c{n}", "name": name, "arguments": args}],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
        )
    return [*turns, say("done")]


def _check(out: Any) -> None:
    assert out.code != 70, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    events = out.events
    assert events[-1]["type"] == "result", events[-1]
    assert events[-1]["exit_code"] == out.code


@pytest.mark.parametrize("hostile", HOSTILE, ids=repr)
def test_replayed_hostile_arguments_end_with_a_result(project: Path, hostile: str) -> None:
    script = write_script(project / "s.jsonl", _turns(calls_for(hostile)))
    out = run_inprocess(["--json", "--safety", "full_access", "--model", f"replay/{script}", "go"], project)
    _check(out)
    assert out.code == 0, out.stderr
    finished = [e for e in out.events if e["type"] == "tool_finished"]
    assert len(finished) == len(calls_for(hostile))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    hostile=st.text(
        alphabet=st.sampled_from(["\x00", "\ud800", "\udfff", "/", ".", "~", "a", "\n", " ", "é"]),
        min_size=1,
        max_size=40,
    ),
    mode=st.sampled_from(["read_only", "ask", "auto", "full_access"]),
)
def test_generated_hostile_arguments_never_crash(project: Path, hostile: str, mode: str) -> None:
    script = write_script(project / "s.jsonl", _turns(calls_for(hostile)[:6]) + [say("x")] * 8)
    out = run_inprocess(["--json", "--safety", mode, "--model", f"replay/{script}", "go"], project)
    _check(out)


def test_huge_arguments_are_error_results(project: Path) -> None:
    calls = [
        ("read_file", {"path": HUGE}),
        ("write_file", {"path": HUGE, "content": "c"}),
        ("execute_command", {"command": "echo hi", "working_dir": HUGE}),
    ]
    script = write_script(project / "s.jsonl", _turns(calls))
    out = run_inprocess(["--json", "--safety", "full_access", "--model", f"replay/{script}", "go"], project)
    _check(out)
    finished = [e for e in out.events if e["type"] == "tool_finished"]
    assert [e["status"] for e in finished] == ["error", "error", "error"]
    assert "1000000 characters" in finished[0]["error"]


def test_surrogates_do_not_kill_the_next_provider_request(project: Path) -> None:
    """The fake server sends `\\ud800` as a JSON escape, as a real API can; the run must send the
    following request (which carries the call and its result) and finish normally."""
    calls = [
        ("write_file", {"path": "s.txt", "content": "a\ud800b"}),
        ("read_file", {"path": "a\ud800b"}),
        ("execute_command", {"command": "echo \udcff", "working_dir": "\ud800"}),
    ]
    script = [{"type": "turn", **t} for t in _turns(calls)]
    with FakeProviderServer(script) as server:
        out = run_inprocess(
            ["--json", "--safety", "full_access", "--model", "anthropic/claude-sonnet-4-5", "go"],
            project,
            env=fake_env(server),
        )
        bodies = [r.get("body") for r in server.requests]
    _check(out)
    assert out.code == 0, out.stderr
    assert len(bodies) == len(calls) + 1
    assert "\ufffd" in json.dumps(bodies[-1], ensure_ascii=False)
    assert (project / "s.txt").read_text(encoding="utf-8") == "a\ufffdb"


def test_invalid_utf8_on_stdin_is_replaced_with_a_warning(project: Path) -> None:
    import subprocess
    import sys

    script = write_script(project / "s.jsonl", [say("ok")])
    proc = subprocess.run(
        [sys.executable, "-m", "mermaid_cli", "exec", "--json", "--model", f"replay/{script}", "-"],
        cwd=project,
        input=b"review this \xff\xfe log",
        capture_output=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert b"not valid UTF-8" in proc.stderr and b"offset 12" in proc.stderr
    result = json.loads(proc.stdout.decode("utf-8").splitlines()[-1])
    assert result["type"] == "result" and result["status"] == "success"


@pytest.mark.parametrize("flag", ["--record", "--diff-out", "--output-last-message"])
def test_unwritable_output_paths_are_exit_2_before_the_model(project: Path, flag: str) -> None:
    (project / "afile").write_text("")
    script = write_script(project / "s.jsonl", [say("never read")])
    out = run_inprocess(["--json", flag, "afile/out.txt", "--model", f"replay/{script}", "go"], project)
    assert out.code == 2, out.stderr
    assert out.events[-1]["type"] == "result" and out.events[-1]["num_turns"] == 0
    assert flag in out.events[-1]["errors"][0]
