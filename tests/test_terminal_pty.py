"""The terminal view for real: `mermaid exec` in a pseudo-terminal (stdin and stderr on the pty,
stdout to a file) answers an approval prompt; stdout is the same bytes with and without a TTY;
`rich` is never imported without one; a hung-up terminal leaves the run going."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FixedClock, call, run_mermaid, say, write_script
from pty_helpers import PtyRun

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX pseudo-terminals")

SCRIPT = [
    call("read_file", {"path": "src/users.py"}, "c1", text="Let me look at the users module first."),
    call(
        "edit_file",
        {
            "path": "src/users.py",
            "target_content": "    return []\n",
            "replacement_content": "    # every registered user\n    return list(USERS)\n",
        },
        "c2",
        text="Now users() returns the registered users.",
    ),
    say("Done: users() returns the registered users."),
]
ORIGINAL = "def users():\n    return []\n\n\ndef admin():\n    return None\n"


@pytest.fixture
def users(project: Path) -> Path:
    (project / "src").mkdir()
    (project / "src" / "users.py").write_text(ORIGINAL)
    write_script(project / "s.jsonl", SCRIPT)
    return project


def env() -> dict[str, str]:
    keys = ("MERMAID_CONFIG_DIR", "MERMAID_DATA_DIR", "MERMAID_NO_KEYRING")
    return {k: os.environ[k] for k in keys}


def start(project: Path, tmp_path: Path, *args: str, **kwargs) -> PtyRun:
    return PtyRun(["exec", *args], project, env(), tmp_path / "stdout", **kwargs)


def test_a_run_at_a_terminal_answers_an_approval_with_a_diff(users, tmp_path):
    run = start(users, tmp_path, "--safety", "ask", "--model", "replay/s.jsonl", "fix users")
    try:
        run.wait_for("[Esc = no]")
        screen = run.text
        assert "replay/s.jsonl · turn" in screen  # the live status line
        assert "✓ tool#1 read_file src/users.py" in screen
        assert "Let me look at the users module first." in screen  # narration
        assert "src/users.py +2 -1" in screen  # the diff preview
        assert "+    return list(USERS)" in screen and "-    return []" in screen
        assert "risk file_mutation" in screen and "safety mode 'ask'" in screen
        assert "\x1b[32m" in run.raw  # coloured
        run.send(b"1")
        assert run.wait() == 0
    finally:
        run.close()
    screen = run.text
    assert "yes" in screen.split("[Esc = no]:")[1]
    assert "run summary" in screen and "│ success" in screen and "files changed │ src/users.py" in screen
    assert "Traceback" not in screen
    assert (users / "src" / "users.py").read_text().count("list(USERS)") == 1
    assert run.stdout == b"Done: users() returns the registered users.\n"
    (tmp_path / "pane.txt").write_text(screen)


def test_no_answers_no(users, tmp_path):
    run = start(users, tmp_path, "--json", "--safety", "ask", "--model", "replay/s.jsonl", "fix users")
    try:
        run.wait_for("[Esc = no]")
        run.send(b"\x1b")
        assert run.wait() == 0
    finally:
        run.close()
    events = [json.loads(line) for line in run.stdout.splitlines()]
    decided = [e for e in events if e["type"] == "approval_decided"]
    assert [(d["verdict"], d["by"]) for d in decided] == [("deny", "user")]
    assert (users / "src" / "users.py").read_text() == ORIGINAL
    assert "denied by user" in run.text


def test_a_closed_terminal_leaves_the_run_going_headless_safe(users, tmp_path):
    """SIGHUP while a prompt waits: the prompt answers no, the run finishes and exits with its
    own code (not killed by the signal), stdout still gets the whole result."""
    run = start(users, tmp_path, "--json", "--safety", "ask", "--model", "replay/s.jsonl", "fix users")
    try:
        run.wait_for("[Esc = no]")
        run.hang_up()
        code = run.proc.wait(timeout=60)
    finally:
        run.close()
    assert code == 0
    events = [json.loads(line) for line in run.stdout.splitlines()]
    assert events[-1]["type"] == "result" and events[-1]["status"] == "success"
    decided = [e for e in events if e["type"] == "approval_decided"]
    assert [(d["verdict"], d["by"]) for d in decided] == [("deny", "user")]
    assert (users / "src" / "users.py").read_text() == ORIGINAL


def test_stdout_is_the_same_with_and_without_a_terminal(users, tmp_path):
    run = start(users, tmp_path, "--safety", "full_access", "--model", "replay/s.jsonl", "fix users")
    try:
        assert run.wait() == 0
    finally:
        run.close()
    assert "run summary" in run.text  # the view was on
    (users / "src" / "users.py").write_text(ORIGINAL)
    plain = run_mermaid(["exec", "--safety", "full_access", "--model", "replay/s.jsonl", "fix users"], users)
    assert plain.code == 0 and "run summary" not in plain.stderr
    assert run.stdout == plain.stdout.encode()


class TtyStderr(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("fmt", [["--json"], ["--format", "json"], [], ["--format", "markdown"]])
def test_stdout_bytes_are_identical_with_a_tty_on_stderr(users, fmt):
    """Same clock, same script: every byte of stdout is the same whether the view runs or not."""
    from mermaid_cli.cli import main as cli_mod
    from mermaid_cli.cli.exec_run import options_from_params
    from mermaid_cli.run.runner import RunIO, execute

    outputs = []
    for tty in (False, True):
        (users / "src" / "users.py").write_text(ORIGINAL)
        args = [*fmt, "--ephemeral", "--safety", "full_access", "--model", "replay/s.jsonl", "fix users"]
        opts = options_from_params(cli_mod.exec_.make_context("exec", args).params)
        out, err, clock = io.BytesIO(), TtyStderr() if tty else io.StringIO(), FixedClock()
        run_env = {**os.environ, "TERM": "xterm-256color"}
        run_env.pop("NO_COLOR", None)
        run_io = RunIO(
            stdin=None,
            stdin_is_tty=False,
            stdout=out,
            stderr=err,
            stderr_is_tty=tty,
            env=run_env,
            cwd=users,
            clock=clock.clock,
            monotonic=clock.monotonic,
            install_signal_handlers=False,
        )
        assert execute(opts, run_io) == 0
        outputs.append((out.getvalue(), err.getvalue()))
    (plain_out, plain_err), (tty_out, tty_err) = outputs
    assert "run summary" in tty_err and "run summary" not in plain_err
    assert tty_out == plain_out


PROBE = """
import os, sys
os._exit = sys.exit  # the fast exit skips the report below; here exit by SystemExit instead
from mermaid_cli.cli.main import cli
try:
    cli(sys.argv[2:], prog_name="mermaid")
except SystemExit:
    pass
loaded = sorted(m for m in sys.modules if m == "rich" or m.startswith("rich."))
open(sys.argv[1], "w").write(",".join(loaded))
"""


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["--help"],
        ["exec", "--help"],
        ["exec", "--model", "replay/s.jsonl", "fix users"],
        ["exec", "--json", "--safety", "ask", "--model", "replay/s.jsonl", "fix users"],
    ],
)
def test_rich_is_not_imported_without_a_terminal(users, tmp_path, args):
    report = tmp_path / "modules"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(report), *args],
        cwd=users,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, "TERM": "xterm-256color"},
        timeout=60,
    )
    assert "Traceback" not in proc.stderr
    assert report.read_text() == ""


def test_rich_is_imported_at_a_terminal(users, tmp_path):
    """The control for the test above: the same probe at a pty loads rich."""
    report = tmp_path / "modules"
    argv = [
        sys.executable,
        "-c",
        PROBE,
        str(report),
        "exec",
        "--safety",
        "full_access",
        "--model",
        "replay/s.jsonl",
        "x",
    ]
    run = PtyRun([], users, env(), tmp_path / "stdout", argv=argv)
    try:
        run.wait()
    finally:
        run.close()
    assert "rich.console" in report.read_text().split(",")


@pytest.mark.parametrize(
    ("flag", "extra_env"),
    [(["--plain"], {}), (["--no-interactive"], {}), ([], {"NO_COLOR": "1"}), ([], {"TERM": "dumb"})],
)
def test_plain_lines_at_a_terminal_when_asked(users, tmp_path, flag, extra_env):
    run = PtyRun(
        ["exec", *flag, "--safety", "full_access", "--model", "replay/s.jsonl", "fix users"],
        users,
        {**env(), **extra_env},
        tmp_path / "stdout",
    )
    try:
        assert run.wait() == 0
    finally:
        run.close()
    assert "mermaid: tool#1 read_file src/users.py" in run.text
    assert "run summary" not in run.text and "\x1b[" not in run.raw


def test_sessions_show_at_a_terminal(users, tmp_path):
    out = run_mermaid(
        ["exec", "--json", "--safety", "full_access", "--model", "replay/s.jsonl", "fix users"], users
    )
    session_id = out.events[0]["session_id"]
    rich_run = PtyRun(["sessions", "show", session_id], users, env(), None, cols=80)
    plain_run = PtyRun(["sessions", "show", "--plain", session_id], users, env(), None, cols=80)
    try:
        assert rich_run.wait() == 0 and plain_run.wait() == 0
    finally:
        rich_run.close()
        plain_run.close()
    assert "assistant ───" in rich_run.text and "tool call read_file" in rich_run.text
    assert "\x1b[" in rich_run.raw
    assert "[assistant] Let me look at the users module first." in plain_run.text
    assert "\x1b[" not in plain_run.raw
    piped = run_mermaid(["sessions", "show", session_id], users)
    assert "[assistant] Let me look at the users module first." in piped.stdout


def test_the_live_status_line_counts_while_the_model_works(project, tmp_path):
    """A slow first byte: the status line shows the model, the turn and the seconds waited; the
    plain heartbeat lines are not printed under the view."""
    from provider_fixtures import FakeProviderServer, fake_env

    script = [
        {"type": "fault", "kind": "slow_first_byte", "delay": 3},
        {
            "type": "turn",
            "content": [{"type": "text", "text": "Done."}],
            "stop_reason": "stop",
            "usage": {"input_tokens": 900, "output_tokens": 40},
        },
    ]
    with FakeProviderServer(script) as server:
        run = PtyRun(
            ["exec", "--model", "anthropic/claude-sonnet-4-5", "go"],
            project,
            {**env(), **fake_env(server), "MERMAID_HEARTBEAT_SECS": "1"},
            tmp_path / "stdout",
        )
        try:
            run.wait_for("anthropic/claude-sonnet-4-5 · turn 1 · ")
            run.wait_for("waiting for the model 2s")
            assert run.wait() == 0
        finally:
            run.close()
    assert "mermaid: waiting for" not in run.text
    assert "940 tokens" in run.text and "run summary" in run.text
    assert run.stdout == b"Done.\n"


def test_a_closed_terminal_with_plain_output(users, tmp_path):
    """`--plain` at a terminal: the plain prompt gets end of input on a hang-up and answers no."""
    run = start(users, tmp_path, "--plain", "--json", "--safety", "ask", "--model", "replay/s.jsonl", "x")
    try:
        run.wait_for("[Esc = no]")
        run.hang_up()
        code = run.proc.wait(timeout=60)
    finally:
        run.close()
    events = [json.loads(line) for line in run.stdout.splitlines()]
    assert code == 0 and events[-1]["type"] == "result"
    assert [(e["verdict"], e["by"]) for e in events if e["type"] == "approval_decided"] == [("deny", "user")]


def test_ctrl_c_at_a_prompt_stops_the_run(users, tmp_path):
    run = start(users, tmp_path, "--json", "--safety", "ask", "--model", "replay/s.jsonl", "fix users")
    try:
        run.wait_for("[Esc = no]")
        run.send(b"\x03")
        assert run.wait() == 130
    finally:
        run.close()
    result = json.loads(run.stdout.splitlines()[-1])
    assert result["type"] == "result" and result["status"] == "interrupted"
    assert "│ interrupted" in run.text and "Traceback" not in run.text
    assert (users / "src" / "users.py").read_text() == ORIGINAL
