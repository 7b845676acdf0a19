"""The real `mermaid` binary: exit codes and the first/last line guarantee on bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import FIXTURES, call, run_mermaid, say, write_script


def assert_framed(out, code: int, status: str):
    assert out.code == code, (out.stdout, out.stderr)
    events = out.events
    assert events[0]["type"] == "session_started"
    assert events[-1]["type"] == "result"
    assert events[-1]["exit_code"] == code and events[-1]["status"] == status
    assert "Traceback" not in out.stdout and "Traceback" not in out.stderr
    return events[-1]


def test_demo_subprocess(project):
    out = run_mermaid(
        ["exec", "--json", "--model", f"replay/{FIXTURES}/demo/hello.jsonl", "create hello.txt"], project
    )
    assert_framed(out, 0, "success")
    assert (project / "hello.txt").read_text() == "hi\n"


def test_python_dash_m_and_version(project):
    out = run_mermaid(["--version"], project)
    assert out.code == 0 and out.stdout.startswith("mermaid ")


def test_empty_prompt_is_exit_2(project):
    result = assert_framed(
        run_mermaid(["exec", "--json", "--model", "replay/x.jsonl", "  "], project), 2, "usage_error"
    )
    assert "prompt must not be empty" in result["errors"][-1]


def test_no_prompt_and_no_stdin_is_exit_2(project):
    result = assert_framed(
        run_mermaid(["exec", "--json", "--model", "replay/x.jsonl"], project), 2, "usage_error"
    )
    assert "no prompt given" in result["errors"][-1]


def test_unknown_flag_is_exit_2_without_traceback(project):
    out = run_mermaid(["exec", "--no-such-flag", "hi"], project)
    assert out.code == 2 and "No such option" in out.stderr and "Traceback" not in out.stderr


def test_malformed_toml_names_the_file(project, isolated_env):
    cfg = isolated_env / "config" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("model = \n")
    result = assert_framed(run_mermaid(["exec", "--json", "hi"], project), 2, "usage_error")
    assert str(cfg) in result["errors"][-1] and "malformed TOML" in result["errors"][-1]


def test_unknown_config_key_names_file_and_key(project):
    (project / ".mermaid").mkdir()
    (project / ".mermaid" / "config.toml").write_text("[run]\nmax_turnz = 3\n")
    result = assert_framed(run_mermaid(["exec", "--json", "hi"], project), 2, "usage_error")
    msg = result["errors"][-1]
    assert ".mermaid/config.toml" in msg and "run.max_turnz" in msg and "unknown key" in msg


def test_bad_override_value_names_the_flag(project):
    result = assert_framed(
        run_mermaid(["exec", "--json", "-c", "run.max_turns=0", "hi"], project), 2, "usage_error"
    )
    assert "-c run.max_turns" in result["errors"][-1] and "greater than or equal to 1" in result["errors"][-1]


def test_resume_unknown_id_is_exit_2(project):
    result = assert_framed(
        run_mermaid(
            ["exec", "--json", "--resume", "20990101_000000_000", "--model", "replay/x", "hi"], project
        ),
        2,
        "usage_error",
    )
    assert "session 20990101_000000_000 not found" in result["errors"][-1]


def test_continue_without_session_is_exit_2(project):
    result = assert_framed(run_mermaid(["exec", "--json", "--continue", "hi"], project), 2, "usage_error")
    assert "no saved session" in result["errors"][-1]


def test_replay_file_that_is_not_jsonl_is_exit_2(project):
    (project / "bad.jsonl").write_text("this is not json\n")
    result = assert_framed(
        run_mermaid(["exec", "--json", "--model", "replay/bad.jsonl", "hi"], project), 2, "usage_error"
    )
    assert "bad.jsonl:1: not a JSON line" in result["errors"][-1]


def test_replay_exhausted_is_exit_5(project):
    write_script(project / "s.jsonl", [call("read_file", {"path": "x"})])
    result = assert_framed(
        run_mermaid(["exec", "--json", "--model", "replay/s.jsonl", "hi"], project), 5, "provider_error"
    )
    assert "recorded only 1" in result["errors"][-1]


def test_no_model_is_exit_5_naming_env_vars(project):
    result = assert_framed(run_mermaid(["exec", "--json", "hi"], project), 5, "provider_error")
    assert "ANTHROPIC_API_KEY" in result["errors"][-1]


def test_limit_exit_4_subprocess(project):
    write_script(project / "s.jsonl", [call("read_file", {"path": "x"}, f"c{i}") for i in range(3)])
    assert_framed(
        run_mermaid(["exec", "--json", "--max-turns", "1", "--model", "replay/s.jsonl", "hi"], project),
        4,
        "limit",
    )


def test_run_alias_accepts_ndjson(project):
    write_script(project / "s.jsonl", [say("hi there")])
    out = run_mermaid(["run", "-f", "ndjson", "--model", "replay/s.jsonl", "hi"], project)
    assert_framed(out, 0, "success")


def test_prompt_from_stdin(project):
    write_script(project / "s.jsonl", [say("ok")])
    out = run_mermaid(["exec", "--json", "--model", "replay/s.jsonl"], project, stdin="from stdin\n")
    assert_framed(out, 0, "success")


def test_stdout_closed_early_no_traceback(project):
    write_script(
        project / "s.jsonl",
        [call("write_file", {"path": "a.txt", "content": "x" * 100}), say("done " * 2000)],
    )
    cmd = f'{sys.executable} -m mermaid_cli exec --json --model replay/s.jsonl hi | head -1; echo "rc=${{PIPESTATUS[0]}}" >&2'
    proc = subprocess.run(["bash", "-c", cmd], cwd=project, capture_output=True, text=True, timeout=60)
    assert json.loads(proc.stdout.splitlines()[0])["type"] == "session_started"
    assert "rc=0" in proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr
    assert (project / "a.txt").exists()  # the run still did its work


@pytest.mark.parametrize(
    "args", [["--resume", "x", "--continue"], ["--system-prompt", "a", "--system-prompt-file", "b"]]
)
def test_conflicting_flags_are_exit_2(project, args):
    assert_framed(run_mermaid(["exec", "--json", *args, "hi"], project), 2, "usage_error")


def test_unwritable_session_dir_is_a_clear_usage_error(project):
    write_script(project / "s.jsonl", [say("ok")])
    (project / ".mermaid").mkdir()
    (project / ".mermaid" / "conversations").write_text("a file where the directory should be")
    result = assert_framed(
        run_mermaid(["exec", "--json", "--model", "replay/s.jsonl", "hi"], project), 2, "usage_error"
    )
    assert "cannot write the session" in result["errors"][-1]


@pytest.mark.parametrize(
    "header",
    ['{"type":"header","version":"2"}', '{"type":"header","version":null}', '{"type":"header","model":5}',
     "[" * 100_000 + "]" * 100_000, '{"type":"header","version":' + "9" * 5000 + "}"],
)  # fmt: skip
def test_a_damaged_recording_header_is_exit_2(project, header):
    (project / "bad.jsonl").write_text(header + "\n")
    result = assert_framed(
        run_mermaid(["exec", "--json", "--model", "replay/bad.jsonl", "hi"], project), 2, "usage_error"
    )
    assert "bad.jsonl:1:" in result["errors"][-1]


def test_a_session_line_no_reader_can_take_is_skipped_not_exit_70(project):
    from conftest import say, write_script

    s1 = write_script(project / "s1.jsonl", [say("answer")])
    first = run_mermaid(["exec", "--json", "--model", f"replay/{s1}", "one"], project)
    sid = json.loads(first.stdout.splitlines()[0])["session_id"]
    path = project / ".mermaid" / "conversations" / f"{sid}.jsonl"
    with path.open("a") as fh:
        fh.write('{"v":1,"seq":1e400,"kind":"run"}\n' + "[" * 100_000 + "]" * 100_000 + "\n")
    again = run_mermaid(["exec", "--json", "--resume", sid, "--model", f"replay/{s1}", "again"], project)
    assert again.code == 0, again.stderr


def test_a_prompt_argument_that_is_not_utf8_is_repaired_not_exit_70(project):
    write_script(project / "s.jsonl", [say("ok")])
    proc = subprocess.run(
        [sys.executable, "-m", "mermaid_cli", "exec", "--json", "--model", "replay/s.jsonl", b"fix caf\xe9"],
        cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["status"] == "success"
    session = project / ".mermaid" / "conversations" / f"{result['session_id']}.jsonl"
    assert "fix caf\ufffd" in session.read_text(encoding="utf-8")  # the prompt as sent


def test_tool_arguments_nested_too_deeply_are_a_bad_call_not_exit_70(project):
    deep = '{"path":"x","content":"y","z":' + "[" * 950 + "]" * 950 + "}"  # json.dumps cannot
    header = (
        '{"type":"header","format":"mermaid-recording","version":1,"model":"anthropic/claude-sonnet-4-5"}'
    )
    turn = '{"type":"turn","content":[{"type":"tool_call","id":"c1","name":"write_file","arguments":%s}],'
    turn += '"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}'
    done = json.dumps({"type": "turn", **say("done")})
    (project / "s.jsonl").write_text("\n".join([header, turn % deep, done]) + "\n")
    result = assert_framed(
        run_mermaid(["exec", "--json", "--model", "replay/s.jsonl", "hi"], project), 2, "usage_error"
    )  # a recording that holds them is not one a model could have made
    assert "nested deeper than" in result["errors"][-1]
    from mermaid_cli.core.arguments import parse_tool_arguments

    assert parse_tool_arguments(deep) == (None, deep)  # from a provider: a call with bad arguments


@pytest.mark.parametrize("price", ["inf", "nan", "1e308"])
def test_a_price_no_model_has_is_exit_2_not_nan_on_stdout(project, price):
    write_script(project / "s.jsonl", [say("ok")])
    setting = f'pricing."anthropic/claude-sonnet-4-5"={{input={price},output=1}}'
    out = run_mermaid(["exec", "--json", "-c", setting, "--model", "replay/s.jsonl", "hi"], project)
    assert_framed(out, 2, "usage_error")
    assert "NaN" not in out.stdout and "Infinity" not in out.stdout


@pytest.mark.parametrize("closed", ["2>&-", ">&-", "<&-"])
def test_a_closed_standard_stream_does_not_end_the_run(project, closed):
    write_script(project / "s.jsonl", [call("write_file", {"path": "a.txt", "content": "x"}), say("done")])
    mermaid = f"{sys.executable} -m mermaid_cli exec --json --model replay/s.jsonl go"
    proc = subprocess.run(
        f"{mermaid} {closed} > out.jsonl" if closed == "2>&-" else f"{mermaid} {closed}",
        shell=True, cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (project / "a.txt").read_text() == "x"
    if closed == "2>&-":
        assert json.loads((project / "out.jsonl").read_text().splitlines()[-1])["status"] == "success"


@pytest.mark.parametrize("bad", ["[run]\ntimeout = -1\n", "[run]\ntimeout = nan\n"])
def test_a_bad_value_in_a_file_is_exit_2_even_when_a_flag_replaces_it(project, isolated_env, bad):
    config = isolated_env / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(bad)
    write_script(project / "s.jsonl", [say("ok")])
    result = assert_framed(
        run_mermaid(["exec", "--json", "--timeout", "60", "--model", "replay/s.jsonl", "hi"], project),
        2,
        "usage_error",
    )
    assert "run.timeout" in result["errors"][-1] and "config.toml" in result["errors"][-1]
