"""The GitHub Action (action.yml + action/*.sh + action/summary.py), run for real outside GitHub.

`action/run.sh` runs as a bash subprocess under a simulated runner environment (GITHUB_OUTPUT,
GITHUB_STEP_SUMMARY, GITHUB_WORKSPACE, RUNNER_TEMP are tmp files/dirs) with the INPUT_* variables
that action.yml's "Run Mermaid" step maps from its inputs (read from action.yml itself, so the
wiring is what is tested), against replay model scripts.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, call, say, write_script
from hypothesis import given, settings
from hypothesis import strategies as st

yaml = pytest.importorskip("yaml", reason="PyYAML is needed to read action.yml (pip install pyyaml)")

ACTION_YML = ROOT / "action.yml"
RUN_SH = ROOT / "action" / "run.sh"
INSTALL_SH = ROOT / "action" / "install.sh"
SUMMARY_PY = ROOT / "action" / "summary.py"
EXAMPLES = ROOT / "examples" / "workflows"
MERMAID = str(Path(sys.executable).with_name("mermaid"))
SECRET = "sk-ant-api03-TESTSECRET-0123456789abcdef"
OPENAI_SECRET = "sk-proj-OPENAISECRET-fedcba9876543210"


# --- reading GitHub's formats ------------------------------------------------------------------------


def parse_github_output(text: str) -> dict[str, str]:
    """Parse a $GITHUB_OUTPUT file the way the runner does (`name=value` and `name<<DELIM` blocks).

    Lines split on \\r\\n, \\r and \\n (as .NET's ReadLine does); a heredoc value is its lines joined
    with \\n.
    """
    lines = re.split(r"\r\n|\r|\n", text)
    if lines and lines[-1] == "":
        lines.pop()
    out: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line == "":
            continue
        eq, heredoc = line.find("="), line.find("<<")
        if eq >= 0 and (heredoc < 0 or eq < heredoc):
            name, value = line[:eq], line[eq + 1 :]
        else:
            assert heredoc > 0, f"invalid output line: {line!r}"
            name, delimiter = line[:heredoc], line[heredoc + 2 :]
            assert delimiter, f"empty delimiter: {line!r}"
            body: list[str] = []
            while True:
                assert i < len(lines), f"unterminated heredoc for {name!r}"
                if lines[i] == delimiter:
                    i += 1
                    break
                body.append(lines[i])
                i += 1
            value = "\n".join(body)
        assert name, f"empty output name: {line!r}"
        out[name] = value
    return out


@functools.cache
def action() -> dict[str, Any]:
    return yaml.safe_load(ACTION_YML.read_text())


def run_step() -> dict[str, Any]:
    return next(s for s in action()["runs"]["steps"] if s.get("id") == "run")


def input_env_names() -> dict[str, str]:
    """action input name -> the env var the run step maps it to (from action.yml)."""
    names: dict[str, str] = {}
    for env_name, value in run_step()["env"].items():
        m = re.fullmatch(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", str(value))
        if m:
            names[m.group(1)] = env_name
    return names


def flag_supported(flag: str) -> bool:
    proc = subprocess.run([MERMAID, "exec", "--help"], capture_output=True, text=True, timeout=60)
    return flag in proc.stdout


def requires_flag(flag: str):
    return pytest.mark.skipif(not flag_supported(flag), reason=f"mermaid exec has no {flag} yet")


# --- running the action ------------------------------------------------------------------------------


@dataclass
class ActionRun:
    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    workspace: Path

    @property
    def events(self) -> list[dict[str, Any]]:
        path = Path(self.outputs["events-file"])
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Runner:
    """A simulated GitHub runner for one test: a workspace, RUNNER_TEMP and the two command files."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        self.runner_temp = tmp_path / "runner_temp"
        self.runner_temp.mkdir()
        self.elsewhere = tmp_path / "elsewhere"  # the step's cwd: run.sh must cd to the workspace
        self.elsewhere.mkdir()
        self.output_file = tmp_path / "github_output"
        self.summary_file = tmp_path / "step_summary"
        self.argv_log = tmp_path / "argv.json"
        self.env_log = tmp_path / "env.json"
        self.bin = MERMAID

    def script(self, turns: list[dict], name: str = "script.jsonl") -> str:
        """A replay model script; returns the model id for the `model` input."""
        return "replay/" + str(write_script(self.tmp / name, turns))

    def record_argv(self) -> None:
        """Put a wrapper in front of mermaid that logs its argv and a few env facts, then execs it."""
        wrapper = self.tmp / "mermaid-wrapper"
        probe = (
            "import json, os, sys\n"
            # the run's own argv: the step summary calls `mermaid report` after it
            f"if sys.argv[1:2] == ['report']: sys.exit(0)\n"
            f"json.dump(sys.argv[1:], open({str(self.argv_log)!r}, 'w'))\n"
            f"json.dump({{k: os.environ.get(k) for k in ('ANTHROPIC_API_KEY', 'OPENAI_API_KEY', "
            f"'INPUT_ANTHROPIC_API_KEY', 'INPUT_OPENAI_API_KEY')}}, open({str(self.env_log)!r}, 'w'))\n"
        )
        (self.tmp / "probe.py").write_text(probe)
        wrapper.write_text(
            f'#!/usr/bin/env bash\n"{sys.executable}" "{self.tmp / "probe.py"}" "$@"\nexec "{MERMAID}" "$@"\n'
        )
        wrapper.chmod(0o755)
        self.bin = str(wrapper)

    @property
    def argv(self) -> list[str]:
        return json.loads(self.argv_log.read_text())

    def run(self, inputs: dict[str, str], env: dict[str, str] | None = None) -> ActionRun:
        names = input_env_names()
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("INPUT_")}
        # Every input the run step maps reaches it, with its default when not given.
        for name, spec in action()["inputs"].items():
            if name in names:
                full_env[names[name]] = str(spec.get("default", ""))
        for name, value in inputs.items():
            assert name in names, f"{name} is not an input the run step receives"
            full_env[names[name]] = value
        full_env.update(
            {
                "GITHUB_OUTPUT": str(self.output_file),
                "GITHUB_STEP_SUMMARY": str(self.summary_file),
                "GITHUB_WORKSPACE": str(self.workspace),
                "RUNNER_TEMP": str(self.runner_temp),
                "GITHUB_ACTION_PATH": str(ROOT),
                "GITHUB_ACTIONS": "true",
                "GITHUB_JOB": "test-job",
                "MERMAID_BIN": self.bin,
                "MERMAID_PYTHON": sys.executable,
            }
        )
        full_env.update(env or {})
        proc = subprocess.run(
            ["bash", str(RUN_SH)],
            cwd=self.elsewhere,
            env=full_env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
        outputs_text = self.output_file.read_text() if self.output_file.exists() else ""
        return ActionRun(
            code=proc.returncode,
            stdout=proc.stdout,
            stderr=proc.stderr,
            outputs=parse_github_output(outputs_text),
            summary=self.summary_file.read_text() if self.summary_file.exists() else "",
            workspace=self.workspace,
        )


@pytest.fixture
def gh(tmp_path) -> Runner:
    return Runner(tmp_path)


def write_hello(path: str = "hello.txt", answer: str = 'Created hello.txt containing "hi".') -> list[dict]:
    return [call("write_file", {"path": path, "content": "hi\n"}), say(answer)]


def session_prompt(run: ActionRun, project: Path) -> str:
    """The first user message of the run's session file, as Mermaid received it."""
    session = project / ".mermaid" / "conversations" / f"{run.outputs['session-id']}.jsonl"
    for line in session.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("kind") == "message" and rec["message"]["role"] == "user":
            return "".join(b.get("text", "") for b in rec["message"]["content"])
    raise AssertionError("no user message in the session file")


def stray_files(root: Path, name_part: str) -> list[Path]:
    return [p for p in root.rglob("*") if name_part in p.name]


# --- end to end ------------------------------------------------------------------------------------------


def test_success_writes_outputs_summary_and_exits_zero(gh):
    answer = "Done.\n\nline two | with a pipe\nEOF\nghadelimiter_0000\n::error::not a command\n"
    result = gh.run({"prompt": "create hello.txt", "model": gh.script(write_hello(answer=answer))})

    assert result.code == 0, result.stderr
    assert (gh.workspace / "hello.txt").read_text() == "hi\n"
    out = result.outputs
    assert out["exit-code"] == "0"
    assert out["status"] == "success"
    assert re.fullmatch(r"[\w-]+", out["session-id"])
    assert out["response"] == answer  # multi-line, byte for byte, through the heredoc format
    assert out["structured-output"] == ""
    assert float(out["cost-usd"]) > 0  # a replay is priced as the model it recorded
    assert out["files-changed"] == "hello.txt"
    # Every output action.yml exposes is written by the step.
    for name, spec in action()["outputs"].items():
        m = re.fullmatch(r"\$\{\{\s*steps\.run\.outputs\.([\w-]+)\s*\}\}", spec["value"])
        assert m, f"output {name} does not come from the run step"
        assert m.group(1) in out, f"output {name} is never written"
    events = result.events
    assert events[0]["type"] == "session_started" and events[-1]["type"] == "result"
    assert Path(out["events-file"]).parent.parent == gh.runner_temp
    assert out["artifact-name"] == f"mermaid-events-test-job-{out['session-id']}"

    assert "Mermaid: success (exit 0)" in result.summary
    assert "| `write_file` | 1 | 0 |" in result.summary
    assert "- `hello.txt`" in result.summary
    assert "line two | with a pipe" in result.summary  # the answer, fenced
    assert "::error" not in result.stdout
    # the run's timeline from `mermaid report`, folded under the summary (GitHub draws the gantt)
    timeline = result.summary.split("<summary>Timeline</summary>", 1)[1]
    assert "```mermaid\ngantt" in timeline and "section Model" in timeline and "write_file" in timeline


def test_nonzero_exit_code_propagates_after_outputs(gh):
    result = gh.run({"prompt": "create hello.txt", "model": gh.script(write_hello()), "max-turns": "1"})

    assert result.code == 4
    assert result.outputs["exit-code"] == "4"
    assert result.outputs["status"] == "limit"
    assert result.events[-1]["exit_code"] == 4
    assert "Mermaid: limit (exit 4)" in result.summary
    assert "max turns reached" in result.summary
    assert "::error title=Mermaid::limit (exit 4): max turns reached" in result.stdout


def test_prompt_with_shell_metacharacters_is_not_executed(gh):
    prompt = (
        "Fix $(touch pwned_dollar) and `touch pwned_tick`; touch pwned_semi\n"
        "&& touch pwned_and | touch pwned_pipe > pwned_redirect ${HOME} '\"\n"
        "::add-path::/evil\n"
    )
    result = gh.run({"prompt": prompt, "model": gh.script([say("ok")])})

    assert result.code == 0, result.stderr
    assert stray_files(gh.tmp, "pwned") == []
    assert session_prompt(result, gh.workspace) == prompt.strip()  # verbatim, nothing expanded


def test_prompt_file_relative_to_workspace(gh):
    text = "Say ok. $(touch pwned_file) `touch pwned_file2`"
    (gh.workspace / "task.md").write_text(text)
    result = gh.run({"prompt-file": "task.md", "model": gh.script([say("ok")])})

    assert result.code == 0, result.stderr
    assert result.outputs["response"] == "ok"
    assert stray_files(gh.tmp, "pwned") == []
    assert session_prompt(result, gh.workspace) == text


def test_config_and_other_inputs_are_not_evaluated(gh):
    # A hostile value in a -c line is one argv element: mermaid rejects it as bad TOML (exit 2).
    result = gh.run(
        {
            "prompt": "hi",
            "model": gh.script([say("ok")]),
            "config": "run.max_turns=$(touch pwned_config)\n`touch pwned_config2`=1",
            "policy": "$(touch pwned_policy)",
        }
    )
    assert result.code == 2
    assert result.outputs["exit-code"] == "2"
    assert stray_files(gh.tmp, "pwned") == []


def test_secrets_are_masked_and_never_in_argv_outputs_or_summary(gh):
    gh.record_argv()
    leak = f"Your key is {SECRET} and {OPENAI_SECRET}."
    result = gh.run(
        {
            "prompt": "print the key",
            "model": gh.script([say(leak)]),
            "anthropic-api-key": SECRET,
            "openai-api-key": OPENAI_SECRET,
        }
    )

    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"::add-mask::{SECRET}"
    assert lines[1] == f"::add-mask::{OPENAI_SECRET}"
    assert sum(SECRET in line for line in lines) == 1  # only the mask command itself
    assert OPENAI_SECRET not in "\n".join(lines[2:])
    for text in (
        gh.output_file.read_text(),
        result.summary,
        result.stderr,
        Path(result.outputs["events-file"]).read_text(),
    ):
        assert SECRET not in text and OPENAI_SECRET not in text
    assert "Your key is" in result.outputs["response"]
    # Keys reach mermaid by environment only, and only under the provider's own name.
    assert not any(SECRET in arg or OPENAI_SECRET in arg for arg in gh.argv)
    env = json.loads(gh.env_log.read_text())
    assert env == {
        "ANTHROPIC_API_KEY": SECRET,
        "OPENAI_API_KEY": OPENAI_SECRET,
        "INPUT_ANTHROPIC_API_KEY": None,
        "INPUT_OPENAI_API_KEY": None,
    }


def test_multiline_secret_is_masked_line_by_line(gh):
    result = gh.run(
        {
            "prompt": "hi",
            "model": gh.script([say("ok")]),
            "openai-api-key": "first-line-key\nsecond-line-key\n",
        }
    )
    assert result.code == 0, result.stderr
    assert result.stdout.splitlines()[:2] == ["::add-mask::first-line-key", "::add-mask::second-line-key"]


def test_inputs_become_one_argv_element_each(gh):
    gh.record_argv()
    (gh.workspace / "sub").mkdir()
    result = gh.run(
        {
            "prompt": "create hello.txt",
            "model": gh.script(write_hello()),
            "safety": "auto",
            "max-turns": " 5 ",
            "timeout": "60",
            "allow-untrusted-tools": "TRUE",
            "config": "\nrun.max_turns = 10\n  # a comment\nexec.default_timeout = 30\r\n",
            "working-directory": "sub",
        }
    )

    assert result.code == 0, result.stderr
    assert (gh.workspace / "sub" / "hello.txt").exists()  # --path: the agent worked in sub/
    assert gh.argv == [
        "exec",
        "--json",
        "--path=sub",
        f"--model={gh.script(write_hello())}",
        "--safety=auto",
        "--sandbox=on",  # the Action's default (input `sandbox`)
        "--max-turns=5",
        "--timeout=60",
        "--allow-untrusted-tools",
        "--config=run.max_turns = 10",
        "--config=exec.default_timeout = 30",
        "-",
    ]


def test_cost_cap_and_policy_file_are_passed_and_the_outcome_reported(gh):
    if not (ROOT / "policies" / "read-only-review.toml").exists():
        pytest.skip("policy presets not present yet")
    gh.record_argv()
    (gh.workspace / "ci").mkdir()
    shutil.copy(ROOT / "policies" / "read-only-review.toml", gh.workspace / "ci" / "policy.toml")
    result = gh.run(
        {"prompt": "hi", "model": gh.script([say("ok")]), "max-cost": "1.5", "policy": "ci/policy.toml"}
    )
    assert "--max-cost=1.5" in gh.argv
    assert f"--policy={gh.workspace}/ci/policy.toml" in gh.argv  # a workspace file, made absolute
    # Whatever mermaid decided, the step reports exactly what it said.
    assert result.code == result.events[-1]["exit_code"]
    assert result.outputs["exit-code"] == str(result.code)
    assert result.outputs["status"] == result.events[-1]["status"]


def test_a_policy_name_is_passed_as_is(gh):
    gh.record_argv()
    result = gh.run({"prompt": "hi", "model": gh.script([say("ok")]), "policy": "read-only-review"})
    assert "--policy=read-only-review" in gh.argv
    assert result.code == 0, result.stderr


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"prompt": "a", "prompt-file": "b.md"}, "give prompt or prompt-file, not both"),
        ({"prompt": "  \n"}, "prompt or prompt-file is required"),
        ({"prompt-file": "missing.md"}, "prompt-file not found: missing.md"),
        ({"prompt": "a", "allow-untrusted-tools": "yes"}, "allow-untrusted-tools must be true or false"),
        ({"prompt": "a", "upload-events": "maybe"}, "upload-events must be true or false"),
        ({"prompt": "a", "working-directory": "nope"}, "working-directory not found: nope"),
    ],
)
def test_bad_inputs_fail_with_exit_2_before_running_mermaid(gh, inputs, message):
    gh.record_argv()
    result = gh.run(inputs)

    assert result.code == 2
    assert not gh.argv_log.exists()  # mermaid never ran
    assert result.outputs["exit-code"] == "2"
    assert result.outputs["status"] == "usage_error"
    assert f"::error title=Mermaid::usage_error (exit 2): action input: {message}" in result.stdout
    assert message in result.summary


def test_mermaid_failing_before_its_first_event_still_reports(gh):
    # click rejects the choice before any event is printed: no result line to read.
    result = gh.run({"prompt": "hi", "model": gh.script([say("ok")]), "safety": "bogus"})

    assert result.code == 2
    assert result.outputs["exit-code"] == "2"
    assert result.outputs["status"] == "usage_error"
    assert result.outputs["session-id"] == ""
    assert "without a result event" in result.summary
    assert "Invalid value" in result.stderr  # click's message reached the log


def test_workflow_commands_are_paused_while_mermaid_runs(gh):
    result = gh.run({"prompt": "hi", "model": gh.script([say("ok")])})
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("::stop-commands::"))
    token = lines[start].removeprefix("::stop-commands::")
    assert len(token) >= 32 and token not in result.outputs.values()
    assert lines[start + 1] == f"::{token}::"


@requires_flag("--verify")
def test_verify_results_in_summary_and_annotations(gh):
    gh.record_argv()
    turns = write_hello() + [say("still done")] * 6
    result = gh.run(
        {
            "prompt": "create hello.txt",
            "model": gh.script(turns),
            "verify": "test -f hello.txt\n\n# a comment\nfalse\n",
            "verify-attempts": "1",
        }
    )

    assert gh.argv[-4:] == ["--verify=test -f hello.txt", "--verify=false", "--verify-attempts=1", "-"]
    assert result.code == 1
    assert result.outputs["status"] == "failed"
    verify = [e for e in result.events if e["type"] == "verify_finished"]
    assert {e["command"] for e in verify} == {"test -f hello.txt", "false"}
    assert "### Verify" in result.summary
    assert "| `test -f hello.txt` | 1 | 0 | ✅ |" in result.summary
    assert "| `false` | 1 | 1 | ❌ |" in result.summary and "| `false` | 2 | 1 | ❌ |" in result.summary
    assert "| `false` | 3 |" not in result.summary  # one extra round only
    assert re.search(
        r"^::error title=Mermaid verify failed::false exited 1 \(attempt \d+\)$", result.stdout, re.M
    )


@requires_flag("--verify")
def test_passing_verify_exits_zero(gh):
    result = gh.run(
        {"prompt": "create hello.txt", "model": gh.script(write_hello()), "verify": "test -f hello.txt"}
    )
    assert result.code == 0, result.stderr
    assert "| `test -f hello.txt` | 1 | 0 | ✅ |" in result.summary
    assert "::error" not in result.stdout


@requires_flag("--verify")
def test_verify_that_passes_on_the_second_round(gh):
    # The model first claims success without doing the work; the failing check goes back to it.
    turns = [say("done"), *write_hello(answer="now it is really done")]
    result = gh.run({"prompt": "create hello.txt", "model": gh.script(turns), "verify": "test -f hello.txt"})

    assert result.code == 0, result.stderr
    assert result.outputs["response"] == "now it is really done"
    assert "| `test -f hello.txt` | 1 | 1 | ❌ |" in result.summary
    assert "| `test -f hello.txt` | 2 | 0 | ✅ |" in result.summary
    assert (
        "::warning title=Mermaid verify passed after a retry::test -f hello.txt failed first and passed on attempt 2"
        in result.stdout.splitlines()
    )


@requires_flag("--output-schema")
def test_unmet_output_schema_fails_with_empty_structured_output(gh):
    (gh.workspace / "schema.json").write_text(json.dumps({"type": "object", "required": ["answer"]}))
    result = gh.run(
        {
            "prompt": "answer",
            "model": gh.script([say("It is 42."), say("forty-two, not JSON")] + [say("still not JSON")] * 3),
            "output-schema": "schema.json",
        }
    )
    assert result.code == 1
    assert result.outputs["status"] == "failed"
    assert result.outputs["structured-output"] == ""
    assert "output_schema" in result.summary


@requires_flag("--output-schema")
def test_structured_output(gh):
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    (gh.workspace / "schema.json").write_text(json.dumps(schema))
    result = gh.run(
        {
            "prompt": "what is six times seven?",
            "model": gh.script([say("It is 42."), say('```json\n{"answer": 42}\n```')]),
            "output-schema": "schema.json",
        }
    )
    assert result.code == 0, result.stderr
    assert json.loads(result.outputs["structured-output"]) == {"answer": 42}
    assert "Structured output" in result.summary


@requires_flag("--diff-out")
def test_diff_out(gh):
    result = gh.run(
        {
            "prompt": "create hello.txt",
            "model": gh.script(write_hello()),
            "diff-out": str(gh.runner_temp / "run.diff"),
        }
    )
    assert result.code == 0, result.stderr
    assert result.outputs["diff-file"] == str(gh.runner_temp / "run.diff")
    diff = (gh.runner_temp / "run.diff").read_text()
    assert "hello.txt" in diff and "+hi" in diff


@requires_flag("--diff-out")
def test_relative_diff_out_is_relative_to_the_workspace(gh):
    (gh.tmp / "diffs").mkdir()
    (gh.workspace / "sub").mkdir()
    result = gh.run(
        {
            "prompt": "create hello.txt",
            "model": gh.script(write_hello()),
            "diff-out": "../diffs/run.diff",
            "working-directory": "sub",
        }
    )
    assert result.code == 0, result.stderr
    assert Path(result.outputs["diff-file"]).resolve() == (gh.tmp / "diffs" / "run.diff").resolve()
    assert "+hi" in (gh.tmp / "diffs" / "run.diff").read_text()


# --- summary.py on hand-written event logs ------------------------------------------------------------


def run_summary(tmp_path: Path, events: list[dict], exit_code: int, env: dict | None = None) -> ActionRun:
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events) + "not json\n")
    out, summ = tmp_path / "out", tmp_path / "summary"
    full_env = {**os.environ, "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summ), **(env or {})}
    proc = subprocess.run(
        [sys.executable, str(SUMMARY_PY), "--events", str(log), "--exit-code", str(exit_code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return ActionRun(
        0, proc.stdout, proc.stderr, parse_github_output(out.read_text()), summ.read_text(), tmp_path
    )


def result_event(**fields) -> dict:
    base = {
        "type": "result",
        "response": "",
        "errors": [],
        "session_id": "s1",
        "status": "success",
        "exit_code": 0,
        "num_turns": 1,
        "cost_usd": 0.01234,
        "tool_calls": 0,
        "tool_errors": 0,
        "blocked": [],
        "files_changed": [],
    }
    return {**base, **fields}


def test_blocked_calls_are_annotated_without_command_injection(tmp_path):
    reason = "approval required but nobody can answer\n::add-path::/evil, 100% | sure"
    events = [
        {"type": "session_started", "session_id": "s1", "model": "m", "safety_mode": "ask"},
        result_event(
            status="blocked",
            exit_code=3,
            blocked=[{"call_id": "tool#2", "tool": "execute_command", "reason": reason}],
            errors=["blocked: execute_command"],
        ),
    ]
    run = run_summary(tmp_path, events, 3)

    lines = run.stdout.splitlines()
    assert (
        "::error title=Mermaid blocked a tool call::execute_command (tool#2): approval required but nobody "
        "can answer%0A::add-path::/evil, 100%25 | sure"
    ) in lines
    assert not any(line.startswith("::add-path::") for line in lines)
    assert "::error title=Mermaid::blocked (exit 3): blocked: execute_command" in lines
    assert "### Blocked calls (1)" in run.summary
    assert (
        "| `tool#2` | `execute_command` | approval required but nobody can answer ::add-path::/evil, 100% \\| sure |"
        in run.summary
    )
    assert run.outputs["cost-usd"] == "0.01234"
    assert "$0.0123" in run.summary
    assert "1 line(s) of the event log were not JSON objects" in run.summary


def test_blocked_call_in_a_run_that_went_on_is_a_warning(tmp_path):
    events = [result_event(blocked=[{"call_id": "tool#1", "tool": "web_fetch", "reason": "headless"}])]
    run = run_summary(tmp_path, events, 0)
    assert run.stdout.splitlines() == [
        "::warning title=Mermaid blocked a tool call::web_fetch (tool#1): headless"
    ]


def test_verify_that_passes_on_the_second_round_is_a_warning(tmp_path):
    events = [
        {
            "type": "verify_finished",
            "command": "pytest -q",
            "exit_code": 1,
            "attempt": 1,
            "output": "1 failed",
        },
        {
            "type": "verify_finished",
            "command": "pytest -q",
            "exit_code": 0,
            "attempt": 2,
            "output": "3 passed",
        },
        result_event(structured_output={"ok": True, "note": "ünïcode"}),
    ]
    run = run_summary(tmp_path, events, 0)
    assert run.stdout.splitlines() == [
        "::warning title=Mermaid verify passed after a retry::pytest -q failed first and passed on attempt 2"
    ]
    assert "| `pytest -q` | 1 | 1 | ❌ |" in run.summary and "| `pytest -q` | 2 | 0 | ✅ |" in run.summary
    assert run.outputs["structured-output"] == '{"ok":true,"note":"ünïcode"}'


def test_failed_verify_output_is_shown_and_secrets_redacted(tmp_path):
    events = [
        {
            "type": "verify_finished",
            "command": "pytest -q",
            "exit_code": 2,
            "attempt": 3,
            "output": f"E {SECRET}\n```",
        },
        result_event(
            status="failed", exit_code=1, errors=["verify: pytest -q failed"], response=f"key {SECRET}"
        ),
    ]
    run = run_summary(tmp_path, events, 1, env={"ANTHROPIC_API_KEY": SECRET})
    assert "::error title=Mermaid verify failed::pytest -q exited 2 (attempt 3)" in run.stdout
    assert "<details><summary>Output of `pytest -q`</summary>" in run.summary
    assert "````\nE ***\n```\n````" in run.summary  # a longer fence than the output's own
    assert SECRET not in run.summary + run.stdout + "".join(run.outputs.values())
    assert run.outputs["response"] == "key ***"


@functools.cache
def summary_module():
    spec = importlib.util.spec_from_file_location("action_summary", SUMMARY_PY)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["action_summary"] = module
    spec.loader.exec_module(module)
    return module


@settings(deadline=None)  # the first example loads the module: no timing here (tests time nothing)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r")))
def test_any_value_round_trips_through_the_output_format(value):
    block = summary_module().output_block("response", value)
    assert parse_github_output(block) == {"response": value}


def test_a_value_containing_the_delimiter_gets_another(monkeypatch):
    mod = summary_module()
    tokens = iter(["aa", "bb"])
    monkeypatch.setattr(mod.secrets, "token_hex", lambda n: next(tokens))
    block = mod.output_block("x", "ghadelimiter_aa")
    assert block == "x<<ghadelimiter_bb\nghadelimiter_aa\nghadelimiter_bb\n"


# --- static checks of action.yml, the scripts and the example workflows -------------------------------


def run_blocks(doc: Any, keys: tuple[str, ...] = ("run", "script")) -> list[str]:
    """Every code block in a workflow: `run:` scripts and actions/github-script `script:`s."""
    found: list[str] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key in keys and isinstance(value, str):
                found.append(value)
            else:
                found.extend(run_blocks(value, keys))
    elif isinstance(doc, list):
        for item in doc:
            found.extend(run_blocks(item, keys))
    return found


def test_action_yml_inputs_are_declared_and_used():
    doc = action()
    assert doc["runs"]["using"] == "composite"
    declared = set(doc["inputs"])
    referenced = set(re.findall(r"inputs\.([\w-]+)", ACTION_YML.read_text()))
    assert referenced <= declared, f"undeclared inputs: {referenced - declared}"
    assert declared <= referenced, f"inputs never used: {declared - referenced}"
    expected = {
        "prompt", "prompt-file", "model", "safety", "policy", "allow-untrusted-tools", "max-turns",
        "max-cost", "timeout", "output-schema", "verify", "config", "working-directory",
        "anthropic-api-key", "openai-api-key", "upload-events", "python-version",
    }  # fmt: skip
    assert expected <= declared
    assert {
        "exit-code",
        "status",
        "session-id",
        "response",
        "structured-output",
        "cost-usd",
        "events-file",
    } <= set(doc["outputs"])
    for spec in doc["inputs"].values():
        assert spec.get("description")


def test_no_expression_is_expanded_inside_a_script():
    for script in run_blocks(action()):
        assert "${{" not in script, script
    # Each input run.sh reads is mapped in the run step's env, and each mapped one is read.
    env = run_step()["env"]
    used = set(re.findall(r"\bINPUT_[A-Z_]+\b", RUN_SH.read_text()))
    mapped = {k for k in env if k.startswith("INPUT_")}
    assert used == mapped
    # Keys go by env only: they appear nowhere but the run step's env.
    text = ACTION_YML.read_text()
    assert text.count("inputs.anthropic-api-key") == 1 and text.count("inputs.openai-api-key") == 1
    assert "eval" not in re.sub(r"#.*", "", RUN_SH.read_text())


def test_action_steps_use_pinned_major_versions():
    uses = [s["uses"] for s in action()["runs"]["steps"] if "uses" in s]
    assert "actions/upload-artifact@v6" in uses
    assert all(re.fullmatch(r"[\w-]+/[\w-]+@v\d+", u) for u in uses)
    upload = next(
        s for s in action()["runs"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact")
    )
    assert "always()" in upload["if"] and "inputs.upload-events" in upload["if"]


def test_shell_scripts_parse():
    for script in (RUN_SH, INSTALL_SH):
        proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert "set -euo pipefail" in script.read_text()
    if shutil.which("shellcheck"):
        proc = subprocess.run(["shellcheck", str(RUN_SH), str(INSTALL_SH)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout


def workflows() -> list[Path]:
    return sorted(EXAMPLES.glob("*.yml"))


def test_example_workflows_exist():
    assert {p.name for p in workflows()} >= {"fix-failing-test.yml", "review-pr.yml", "nightly-triage.yml"}


@pytest.mark.parametrize("path", workflows(), ids=lambda p: p.name)
def test_example_workflow_is_sound(path):
    doc = yaml.safe_load(path.read_text())
    triggers = doc.get("on", doc.get(True))  # PyYAML reads a bare `on:` key as True
    assert triggers, "no trigger"
    assert "permissions" in doc, "set least-privilege permissions explicitly"
    assert doc["permissions"] == {"contents": "read"}, "the workflow default must be read-only"
    inputs = set(action()["inputs"])
    agent_jobs = 0
    for job in doc["jobs"].values():
        steps = job.get("steps", [])
        mermaid_steps = [s for s in steps if re.search(r"(^|/)mermaid@", s.get("uses", ""))]
        if not mermaid_steps:
            continue
        agent_jobs += 1
        # The agent's job holds the provider key, so it gets no contents write token and no git
        # credentials; the one write it may have is the sticky comment's (`comment: true`), whose
        # token reaches only the action's gate and comment steps.
        if "permissions" in job:
            assert all(str(s.get("with", {}).get("comment")).lower() == "true" for s in mermaid_steps)
            assert job["permissions"] in (
                {"contents": "read", "pull-requests": "write"},
                {"contents": "read", "issues": "write"},
            ), job["permissions"]
        for step in mermaid_steps:
            assert step["uses"] == "OWNER/mermaid@v1"
            assert set(step.get("with", {})) <= inputs, set(step["with"]) - inputs
            assert step["with"].get("anthropic-api-key", "").startswith("${{ secrets.")
        for step in steps:
            if step.get("uses", "").startswith("actions/checkout"):
                assert step.get("with", {}).get("persist-credentials") is False, (
                    "the agent must not see the token"
                )
    assert agent_jobs == 1, "the workflow should run the action in exactly one job"
    # Untrusted text (PR titles, model answers) never lands inside a script or github-script code.
    for script in run_blocks(doc):
        assert "${{" not in script, script


@pytest.mark.parametrize("path", workflows(), ids=lambda p: p.name)
def test_example_scripts_are_valid_bash(path, tmp_path):
    for i, script in enumerate(run_blocks(yaml.safe_load(path.read_text()), keys=("run",))):
        file = tmp_path / f"step{i}.sh"
        file.write_text(script)
        proc = subprocess.run(["bash", "-n", str(file)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        if shutil.which("shellcheck"):
            # SC2016 (backticks in single quotes) is intended: prompts quote commands literally.
            proc = subprocess.run(
                ["shellcheck", "-s", "bash", "--severity=warning", str(file)], capture_output=True, text=True
            )
            assert proc.returncode == 0, proc.stdout


def test_example_workflows_use_the_documented_modes():
    def with_of(name: str) -> dict:
        doc = yaml.safe_load((EXAMPLES / name).read_text())
        steps = [s for job in doc["jobs"].values() for s in job.get("steps", [])]
        return next(s["with"] for s in steps if "mermaid@" in s.get("uses", ""))

    fix = with_of("fix-failing-test.yml")
    assert fix["safety"] == "auto" and "pytest -q" in fix["verify"] and fix.get("diff-out")
    review = with_of("review-pr.yml")
    assert review["safety"] == "read_only" and review.get("output-schema")
    triage = with_of("nightly-triage.yml")
    assert triage["allow-untrusted-tools"] in (True, "true")
    nightly = yaml.safe_load((EXAMPLES / "nightly-triage.yml").read_text())
    assert "schedule" in nightly.get("on", nightly.get(True))


# --- docs/ci.md: the snippets are copy-pasteable ---------------------------------------------------------

CI_MD = ROOT / "docs" / "ci.md"


def doc_blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", CI_MD.read_text(), re.S)


def test_ci_doc_yaml_snippets_parse():
    blocks = doc_blocks("yaml")
    assert len(blocks) >= 3
    for block in blocks:
        assert yaml.safe_load(block)


def test_ci_doc_shell_snippets_parse(tmp_path):
    for i, block in enumerate(doc_blocks("sh")):
        file = tmp_path / f"snippet{i}.sh"
        file.write_text(block)
        proc = subprocess.run(["bash", "-n", str(file)], capture_output=True, text=True)
        assert proc.returncode == 0, block + proc.stderr


def test_ci_doc_tables_list_every_input_and_output():
    text = CI_MD.read_text()
    for name in list(action()["inputs"]) + list(action()["outputs"]):
        assert f"| `{name}` |" in text, f"docs/ci.md does not document {name}"


@pytest.mark.skipif(not shutil.which("jq"), reason="jq is not installed")
def test_ci_doc_jq_recipes_run_on_a_real_log(gh):
    result = gh.run({"prompt": "create hello.txt", "model": gh.script(write_hello())})
    assert result.code == 0, result.stderr
    shutil.copy(result.outputs["events-file"], gh.tmp / "events.jsonl")
    recipes = [
        line
        for block in doc_blocks("sh")
        for line in block.splitlines()
        if line.startswith("jq ") and line.rstrip().endswith(("events.jsonl", "> /dev/null"))
    ]
    assert len(recipes) >= 10
    answers = {}
    for line in recipes:
        proc = subprocess.run(["bash", "-c", line], cwd=gh.tmp, capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, line + proc.stderr
        answers[line] = proc.stdout
    joined = "\n".join(answers.values())
    assert "success 0" in joined
    assert 'Created hello.txt containing "hi".' in joined
    assert "hello.txt" in joined and "0.00105" in joined
    assert "tool#1\twrite_file\tsuccess" in joined
