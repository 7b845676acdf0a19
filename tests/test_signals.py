"""Signals, the wall clock and hostile tool output, against the real binary and real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import call, pid_alive, run_inprocess, say, write_script
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def _start(project, args):
    return subprocess.Popen(
        [sys.executable, "-m", "mermaid_cli", "exec", "--json", *args],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait_for_line(proc, kind, timeout=30):
    deadline = time.monotonic() + timeout
    lines = []
    while time.monotonic() < deadline:
        raw = proc.stdout.readline()
        if not raw:
            break
        lines.append(json.loads(raw))
        if lines[-1]["type"] == kind:
            return lines
    raise AssertionError(f"no {kind} line: {lines}")


@pytest.mark.parametrize("signum,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_ends_the_run_cleanly(project, signum, code):
    write_script(
        project / "s.jsonl",
        [
            call("execute_command", {"command": "echo $$ > child.pid; sleep 60"}),
            say("never"),
        ],
    )
    proc = _start(project, ["--safety", "full_access", "--model", "replay/s.jsonl", "wait"])
    head = _wait_for_line(proc, "tool_started")
    for _ in range(100):
        if (project / "child.pid").exists() and (project / "child.pid").read_text().strip():
            break
        time.sleep(0.05)
    child = int((project / "child.pid").read_text())
    proc.send_signal(signum)
    rest, err = proc.communicate(timeout=30)
    events = head + [json.loads(x) for x in rest.splitlines()]
    assert proc.returncode == code, err
    assert events[0]["type"] == "session_started" and events[-1]["type"] == "result"
    assert events[-1]["status"] == "interrupted" and events[-1]["exit_code"] == code
    assert any(e["type"] == "tool_finished" and e["status"] == "cancelled" for e in events)
    assert b"Traceback" not in err
    for _ in range(50):
        if not pid_alive(child):
            break
        time.sleep(0.1)
    assert not pid_alive(child), "the command outlived the run"
    sid = events[0]["session_id"]
    assert (project / ".mermaid/conversations" / f"{sid}.jsonl").stat().st_size > 0


def test_timeout_is_exit_124(project):
    write_script(project / "s.jsonl", [call("execute_command", {"command": "sleep 60"}), say("never")])
    proc = _start(project, ["--timeout", "1.5", "--model", "replay/s.jsonl", "wait"])
    out, err = proc.communicate(timeout=60)
    events = [json.loads(x) for x in out.splitlines()]
    assert proc.returncode == 124, err
    assert events[-1]["status"] == "timeout" and "--timeout" in events[-1]["errors"][-1]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(min_size=1, max_size=3000))
def test_arbitrary_tool_output_bytes_give_valid_jsonl(tmp_path, data):
    project = tmp_path / f"p{abs(hash(data))}"
    project.mkdir()
    (project / "junk.bin").write_bytes(data)
    script = write_script(
        project / "s.jsonl", [call("execute_command", {"command": "cat junk.bin"}), say("ok")]
    )
    out = run_inprocess(["--json", "--model", f"replay/{script}", "show"], project)
    assert out.code == 0
    for line in out.stdout.splitlines():
        json.loads(line)  # every line is JSON
    assert out.events[-1]["type"] == "result"


def test_sigterm_while_mcp_servers_start_still_ends_with_a_result(project, isolated_env):
    from pathlib import Path

    hang = Path(__file__).parent / "mcp_servers" / "hang.py"
    cfg = isolated_env / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    started = project.parent / "hang.pid"
    cfg.write_text(
        f'[mcp_servers.slow]\ncommand = "{sys.executable}"\nargs = ["{hang}", "{started}"]\n'
        "startup_timeout_secs = 60\n"
    )
    write_script(project / "s.jsonl", [say("never")])
    proc = _start(project, ["--model", "replay/s.jsonl", "wait"])
    # the run is waiting on the server (its signal handlers long installed) once the server wrote
    # its pid; a fixed sleep alone raced a slow start on a loaded machine
    deadline = time.monotonic() + 50
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    events = [json.loads(x) for x in out.splitlines()]
    assert proc.returncode == 143, err
    assert events[0]["type"] == "session_started" and events[-1]["status"] == "interrupted"
    assert b"Traceback" not in err


@pytest.mark.parametrize("signame,code", [("TERM", 143), ("INT", 130)])
def test_a_signal_while_the_process_starts_still_ends_with_a_result(project, signame, code):
    """A signal after flag parsing but before the run's event loop handles signals (its imports,
    ~0.1 s) is held and honoured: the run stops before any work, with `result` (DESIGN §2). The
    default actions ended the process mid-import: SIGTERM with no output, SIGINT with a traceback.
    Made exact by a `git` stand-in that signals Mermaid as the start-up snapshot runs it."""
    import shutil

    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    write_script(project / "s.jsonl", [call("execute_command", {"command": "echo ran > ran.txt"}), say("ok")])
    bin_dir = project.parent / "bin"
    bin_dir.mkdir()
    stand_in = bin_dir / "git"
    stand_in.write_text(f'#!/bin/sh\nkill -{signame} $PPID\nexec {shutil.which("git")} "$@"\n')
    stand_in.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    proc = subprocess.run(
        [sys.executable, "-m", "mermaid_cli", "exec", "--json", "--safety", "full_access"]
        + ["--model", "replay/s.jsonl", "go"],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == code, proc.stderr
    assert events[0]["type"] == "session_started" and events[-1]["type"] == "result"
    assert events[-1]["status"] == "interrupted" and events[-1]["exit_code"] == code
    assert b"Traceback" not in proc.stderr
    assert not (project / "ran.txt").exists()  # stopped before any tool ran


def _stop_one_and_time_out_the_other(stopped: subprocess.Popen, timed: subprocess.Popen) -> None:
    """A second in, SIGTERM `stopped` (it exits 143); `timed` reaches its `--timeout` (124).
    Neither is left running, whatever fails."""
    try:
        time.sleep(1.0)
        stopped.send_signal(signal.SIGTERM)
        assert stopped.wait(timeout=15) == 143
        assert timed.wait(timeout=15) == 124
    finally:
        for proc in (stopped, timed):
            proc.kill()
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait()


def test_a_stdin_left_open_keeps_neither_a_signal_nor_the_timeout_from_ending_the_run(project):
    """`producer | mermaid exec -` with a producer that hangs: the prompt waits for stdin to close,
    but SIGTERM still ends the run at once (143, `result` last) and `--timeout` still applies (124).
    Before, SIGTERM waited for stdin to close and the run then reported a usage error (exit 2)."""
    write_script(project / "s.jsonl", [say("never")])
    args = [sys.executable, "-m", "mermaid_cli", "exec", "--json", "--model", "replay/s.jsonl"]
    stopped = subprocess.Popen(
        [*args, "-"], cwd=project, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    timed = subprocess.Popen(
        [*args, "--timeout", "1", "-"], cwd=project, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    # a second in, the first waits for stdin (a signal while it still starts is held: 143 too)
    _stop_one_and_time_out_the_other(stopped, timed)
    events = [json.loads(line) for line in stopped.stdout.read().splitlines()]
    assert events[-1]["type"] == "result" and events[-1]["status"] == "interrupted"
    assert b"Traceback" not in stopped.stderr.read()
    result = json.loads(timed.stdout.read().splitlines()[-1])
    assert result["status"] == "timeout" and "--timeout 1 seconds" in result["errors"][-1]


def test_a_git_that_hangs_keeps_neither_the_timeout_nor_a_signal_from_ending_the_run(project):
    """The workspace snapshot's `git` stuck (a stalled file system): `--timeout` and SIGTERM still
    end the run and the process exits, the stuck `git` killed. Before, `result` was written but the
    process waited for the snapshot's thread, past any timeout, until git's own 120 s limit."""
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    write_script(project / "s.jsonl", [call("execute_command", {"command": "echo ran > ran.txt"}), say("ok")])
    bin_dir = project.parent / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f"#!/bin/sh\necho $$ >> {project.parent / 'git.pids'}\nexec sleep 60\n")
    (bin_dir / "git").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    args = [sys.executable, "-m", "mermaid_cli", "exec", "--json", "--safety", "full_access"]
    args += ["--model", "replay/s.jsonl"]
    timed = subprocess.Popen([*args, "--timeout", "2", "go"], cwd=project, env=env, stdout=subprocess.PIPE)
    stopped = subprocess.Popen([*args, "go"], cwd=project, env=env, stdout=subprocess.PIPE)
    _stop_one_and_time_out_the_other(stopped, timed)
    for proc, status in ((stopped, "interrupted"), (timed, "timeout")):
        assert json.loads(proc.stdout.read().splitlines()[-1])["status"] == status
    gits = [int(pid) for pid in (project.parent / "git.pids").read_text().split()]
    assert gits and not any(pid_alive(pid) for pid in gits)
    assert not (project / "ran.txt").exists()


def test_the_timeout_also_covers_mcp_servers_that_never_start(project, isolated_env):
    """`--timeout` caps the whole run, its assembly included: a server given 60 s to start no
    longer stretches a 2 s run to a minute (the run then reported `timeout` after 63 s)."""
    from pathlib import Path

    hang = Path(__file__).parent / "mcp_servers" / "hang.py"
    cfg = isolated_env / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(
        f'[mcp_servers.slow]\ncommand = "{sys.executable}"\nargs = ["{hang}", "{project.parent / "hang.pid"}"]\n'
        "startup_timeout_secs = 60\n"
    )
    write_script(project / "s.jsonl", [say("never")])
    started = time.monotonic()
    proc = _start(project, ["--timeout", "2", "--model", "replay/s.jsonl", "wait"])
    out, err = proc.communicate(timeout=40)
    events = [json.loads(x) for x in out.splitlines()]
    assert proc.returncode == 124, err
    assert events[-1]["status"] == "timeout" and "--timeout 2 seconds" in events[-1]["errors"][-1]
    assert time.monotonic() - started < 30  # the server's 60 s to start did not count
