"""The core run in-process: event order, results, errors the model sees, sessions, limits."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES, call, calls, run_inprocess, say, write_script


def test_demo_creates_file_and_streams_events(project):
    out = run_inprocess(
        ["--json", "--model", f"replay/{FIXTURES}/demo/hello.jsonl", "create hello.txt containing hi"],
        project,
    )
    assert out.code == 0
    assert (project / "hello.txt").read_text() == "hi\n"
    types = [e["type"] for e in out.events]
    assert types[0] == "session_started" and types[-1] == "result"
    assert types == [
        "session_started",
        "text",
        "turn_done",
        "tool_started",
        "tool_finished",
        "text",
        "turn_done",
        "result",
    ]
    result = out.events[-1]
    assert result["status"] == "success" and result["exit_code"] == 0
    assert result["files_changed"] == ["hello.txt"]
    assert result["total_tokens"] == 1520 + 64 + 1611 + 14


def _machine_free(line: str) -> str:
    """The line with what depends on this machine's kernel (the sandbox description: Landlock ABI,
    rule count, temp dir) reduced to the sandbox mode, which does not."""
    event = json.loads(line)
    if isinstance(event.get("sandbox"), dict):
        event["sandbox"] = {"mode": event["sandbox"]["mode"]}
    return json.dumps(event, ensure_ascii=False, separators=(",", ":"))


def test_demo_snapshot(project, snapshot):
    out = run_inprocess(
        ["--json", "--model", f"replay/{FIXTURES}/demo/hello.jsonl", "create hello.txt containing hi"],
        project,
    )
    lines = [
        _machine_free(line).replace(str(project), "<project>").replace(str(FIXTURES), "<fixtures>")
        for line in out.stdout.splitlines()
    ]
    assert lines == snapshot


def test_tool_errors_are_results_the_model_sees(project, snapshot):
    script = write_script(
        project / "s.jsonl",
        [
            call("no_such_tool", {"x": 1}, "c1"),
            call("write_file", "{not json", "c2"),
            call("write_file", {"path": "a.txt"}, "c3"),
            call("read_file", {"path": "missing.txt"}, "c4"),
            say("gave up"),
        ],
    )
    out = run_inprocess(["--json", "--model", f"replay/{script}", "do it"], project)
    assert out.code == 0, out.stderr
    finished = [e for e in out.events if e["type"] == "tool_finished"]
    assert [f["status"] for f in finished] == ["error"] * 4
    assert "unknown tool 'no_such_tool'" in finished[0]["error"]
    assert "not a JSON object" in finished[1]["error"]
    assert "content" in finished[2]["error"] and "Field required" in finished[2]["error"]
    assert out.events[-1]["tool_errors"] == 4
    lines = [_machine_free(line).replace(str(project), "<project>") for line in out.stdout.splitlines()]
    assert lines == snapshot


def test_tool_results_reach_the_model_history(project):
    (project / "in.txt").write_text("the secret word is mango\n")
    script = write_script(project / "s.jsonl", [call("read_file", {"path": "in.txt"}), say("mango")])
    out = run_inprocess(["--json", "--model", f"replay/{script}", "what word?"], project)
    sid = out.events[0]["session_id"]
    lines = [
        json.loads(x) for x in (project / ".mermaid/conversations" / f"{sid}.jsonl").read_text().splitlines()
    ]
    messages = [x["message"] for x in lines if x["kind"] == "message"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    result_block = messages[2]["content"][0]
    assert result_block["type"] == "tool_result" and "mango" in result_block["content"]


def test_concurrent_tool_calls_in_one_turn(project):
    script = write_script(
        project / "s.jsonl",
        [
            calls(
                ("write_file", {"path": "a.txt", "content": "A"}, "c1"),
                ("write_file", {"path": "b.txt", "content": "B"}, "c2"),
            ),
            say("done"),
        ],
    )
    out = run_inprocess(["--json", "--model", f"replay/{script}", "two files"], project)
    assert out.code == 0
    assert (project / "a.txt").read_text() == "A" and (project / "b.txt").read_text() == "B"
    ids = [e["call_id"] for e in out.events if e["type"] == "tool_finished"]
    assert sorted(ids) == ["tool#1", "tool#2"]
    assert sorted(out.events[-1]["files_changed"]) == ["a.txt", "b.txt"]


def test_max_turns_is_exit_4(project):
    script = write_script(project / "s.jsonl", [call("read_file", {"path": "x"}, f"c{i}") for i in range(5)])
    out = run_inprocess(["--json", "--max-turns", "2", "--model", f"replay/{script}", "loop"], project)
    assert out.code == 4
    assert out.events[-1]["status"] == "limit" and out.events[-1]["num_turns"] == 2
    assert "max turns" in out.events[-1]["errors"][-1]


def test_max_tokens_is_exit_4(project):
    script = write_script(project / "s.jsonl", [call("read_file", {"path": "x"}, f"c{i}") for i in range(5)])
    out = run_inprocess(["--json", "--max-tokens", "150", "--model", f"replay/{script}", "loop"], project)
    assert out.code == 4 and out.events[-1]["num_turns"] == 2


def test_replay_exhausted_is_exit_5_with_message(project):
    script = write_script(project / "s.jsonl", [call("read_file", {"path": "x"})])
    out = run_inprocess(["--json", "--model", f"replay/{script}", "go"], project)
    assert out.code == 5
    result = out.events[-1]
    assert result["status"] == "provider_error" and "recorded only 1" in result["errors"][-1]
    assert out.events[-2]["type"] == "error"


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_text_formats_print_answer_and_session_on_stderr(project, fmt):
    script = write_script(project / "s.jsonl", [say("All good.")])
    out = run_inprocess(["--format", fmt, "--model", f"replay/{script}", "hi"], project)
    assert out.code == 0 and out.stdout == "All good.\n"
    assert "session: " in out.stderr


def test_json_format_prints_pretty_result(project):
    script = write_script(project / "s.jsonl", [say("All good.")])
    out = run_inprocess(["--format", "json", "--model", f"replay/{script}", "hi"], project)
    obj = json.loads(out.stdout)
    assert obj["type"] == "result" and obj["response"] == "All good."
    assert out.stdout.count("\n") > 5  # pretty


def test_stdin_is_appended_as_fenced_block(project):
    script = write_script(project / "s.jsonl", [say("ok")])
    out = run_inprocess(["--json", "--model", f"replay/{script}", "summarise"], project, stdin="line one\n")
    sid = out.events[0]["session_id"]
    lines = [
        json.loads(x) for x in (project / ".mermaid/conversations" / f"{sid}.jsonl").read_text().splitlines()
    ]
    first = next(x for x in lines if x["kind"] == "message")
    assert first["message"]["content"][0]["text"] == "summarise\n\n```\nline one\n```"


def test_output_last_message(project):
    script = write_script(project / "s.jsonl", [say("final words")])
    run_inprocess(["--model", f"replay/{script}", "--output-last-message", "out/last.txt", "hi"], project)
    assert (project / "out/last.txt").read_text() == "final words"


def test_resume_and_continue_append_to_the_session(project):
    s1 = write_script(project / "s1.jsonl", [say("first answer")])
    s2 = write_script(project / "s2.jsonl", [say("second answer")])
    first = run_inprocess(["--json", "--model", f"replay/{s1}", "one"], project)
    sid = first.events[0]["session_id"]
    second = run_inprocess(["--json", "--continue", "--model", f"replay/{s2}", "two"], project)
    assert second.code == 0 and second.events[0]["session_id"] == sid
    third = run_inprocess(["--json", "--resume", sid, "--model", f"replay/{s2}", "three"], project)
    assert third.events[-1]["session_id"] == sid
    from mermaid_cli.store.sessions import load_session

    data = load_session(project, sid)
    assert [m.text for m in data.messages] == [
        "one",
        "first answer",
        "two",
        "second answer",
        "three",
        "second answer",
    ]


def test_session_with_a_torn_last_line_still_loads(project):
    s1 = write_script(project / "s1.jsonl", [say("answer")])
    sid = run_inprocess(["--json", "--model", f"replay/{s1}", "one"], project).events[0]["session_id"]
    path = project / ".mermaid/conversations" / f"{sid}.jsonl"
    with path.open("a") as fh:
        fh.write('{"v":1,"seq":99,"kind":"message","index":2,"mess')  # crash mid-write
    from mermaid_cli.store.sessions import load_session

    data = load_session(project, sid)
    assert [m.text for m in data.messages] == ["one", "answer"]
    assert len(data.bad_lines) == 1
    out = run_inprocess(["--json", "--resume", sid, "--model", f"replay/{s1}", "again"], project)
    assert out.code == 0
    assert "conversations/" in (project / ".mermaid/.gitignore").read_text().splitlines()
    # the resumed run's lines start on a line of their own: only the torn one is lost
    again = load_session(project, sid)
    assert [m.text for m in again.messages] == ["one", "answer", "again", "answer"]
    assert len(again.bad_lines) == 1 and again.runs == 2


def test_resume_after_crash_mid_tool_call_repairs_history(project):
    from mermaid_cli.agent.state import repair_history
    from mermaid_cli.core.types import Message, ToolCallBlock, ToolResultBlock

    msgs = [
        Message.user_text("go"),
        Message(role="assistant", content=(ToolCallBlock(id="a", name="x", arguments={}),)),
    ]
    fixed = repair_history(msgs)
    assert isinstance(fixed[-1].content[0], ToolResultBlock) and fixed[-1].content[0].is_error


def test_masked_values_never_reach_stdout_or_session(project):
    script = write_script(
        project / "s.jsonl",
        [
            call("write_file", {"path": "k.txt", "content": "token=hunter2hunter2"}),
            say("wrote hunter2hunter2"),
        ],
    )
    out = run_inprocess(["--json", "--mask", "hunter2hunter2", "--model", f"replay/{script}", "go"], project)
    assert "hunter2hunter2" not in out.stdout and "[REDACTED]" in out.stdout
    session_text = "".join(p.read_text() for p in (project / ".mermaid/conversations").glob("*.jsonl"))
    assert "hunter2hunter2" not in session_text


def test_secret_env_values_are_redacted(project):
    script = write_script(project / "s.jsonl", [say("the key is sk-test-abcdef123456")])
    out = run_inprocess(
        ["--json", "--model", f"replay/{script}", "go"], project, env={"MY_API_KEY": "sk-test-abcdef123456"}
    )
    assert "sk-test-abcdef123456" not in out.stdout


def test_a_reply_cut_by_the_output_cap_is_continued_and_joined(project):
    cut = {
        "content": [{"type": "text", "text": "Part one, "}],
        "stop_reason": "length",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    script = write_script(project / "s.jsonl", [cut, say("part two.")])
    out = run_inprocess(["--json", "--model", f"replay/{script}", "write a long answer"], project)
    assert out.code == 0
    assert out.events[-1]["response"] == "Part one, part two." and out.events[-1]["num_turns"] == 2


def test_continuations_are_capped(project):
    cut = {
        "content": [{"type": "text", "text": "x"}],
        "stop_reason": "length",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    script = write_script(project / "s.jsonl", [cut] * 6)
    out = run_inprocess(["--json", "--model", f"replay/{script}", "go"], project)
    assert out.code == 0 and out.events[-1]["response"] == "xxxxx" and out.events[-1]["num_turns"] == 5


@pytest.mark.parametrize("quiet", [[], ["-q"]])
def test_text_mode_never_prints_errors_on_stdout(project, quiet):
    # `mermaid exec "..." > review.md`: a failed run leaves the answer file empty and says why on stderr
    script = write_script(project / "s.jsonl", [call("list_dir", {"path": "."})])
    provider = run_inprocess([*quiet, "--model", f"replay/{script}", "go"], project)
    assert provider.code == 5 and provider.stdout == ""
    assert "recorded only 1" in provider.stderr
    limit_script = write_script(
        project / "l.jsonl", [call("list_dir", {"path": "."}, "c1"), call("list_dir", {"path": "."}, "c2")]
    )
    limit = run_inprocess([*quiet, "--max-turns", "1", "--model", f"replay/{limit_script}", "go"], project)
    assert limit.code == 4 and limit.stdout == ""
    assert "max turns reached" in limit.stderr
    config = run_inprocess([*quiet, "-c", "run.nope=1", "--model", f"replay/{script}", "go"], project)
    assert config.code == 2 and config.stdout == ""
    assert "run.nope" in config.stderr


def test_a_run_leaves_git_status_with_only_the_agents_changes(project):
    import shutil
    import subprocess

    if not shutil.which("git"):
        pytest.skip("git not installed")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    script = write_script(project.parent / "s.jsonl", [call("write_file", {"path": "a.txt", "content": "x"}), say("ok")])
    out = run_inprocess(["--json", "--model", f"replay/{script}", "write"], project)
    assert out.code == 0, out.stderr
    assert (project / ".mermaid/conversations").is_dir()
    status = subprocess.run(["git", "status", "--porcelain", "-uall"], cwd=project, capture_output=True, text=True)
    assert status.stdout.splitlines() == ["?? a.txt"]
