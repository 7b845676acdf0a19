"""The kernel sandbox wired into runs (issue 14, DESIGN §4.1): real `mermaid exec` processes with a
scripted model, real commands under the real kernel. Where the kernel lacks a feature the
fail-closed exit is what is proved (test_fail_closed_*), never a silent skip."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import call, pid_alive, run_mermaid, say, write_script

from mermaid_cli.config.loader import load_settings
from mermaid_cli.security.childenv import scrubbed_env
from mermaid_cli.security.sandbox import probe
from mermaid_cli.security.sandbox.linux import MIN_LANDLOCK_ABI

SUPPORT = probe({})
CAN_SANDBOX = SUPPORT.landlock_abi >= MIN_LANDLOCK_ABI and SUPPORT.seccomp_filter
needs_kernel = pytest.mark.skipif(
    not CAN_SANDBOX, reason="kernel lacks Landlock/seccomp: test_fail_closed_* prove the exit instead"
)


def _run(project: Path, commands: list[str], *args: str, env: dict[str, str] | None = None, config: str = ""):
    turns = [call("execute_command", {"command": c}, call_id=f"c{i}") for i, c in enumerate(commands)]
    script = write_script(project.parent / "script.jsonl", [*turns, say("done")])
    if config:
        cfg = Path(os.environ["MERMAID_CONFIG_DIR"])
        cfg.mkdir(parents=True, exist_ok=True)
        (cfg / "config.toml").write_text(config)
    return run_mermaid(
        ["exec", "--model", f"replay/{script}", "--format", "jsonl", *args, "go"], cwd=project, env=env
    )


def _outputs(result) -> list[str]:
    return [
        (e.get("output") or "") + (e.get("error") or "")
        for e in result.events
        if e["type"] == "tool_finished"
    ]


ALLOW_ALL = '[[safety.overrides]]\ntool = "execute_command"\ndecision = "allow"\n'


@pytest.fixture
def repo(project: Path) -> Path:
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / "README.md").write_text("hello\n")
    return project


@needs_kernel
def test_read_only_writing_commands_change_no_file(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    writes = [
        "touch new.txt",
        "echo x > README.md",
        "python3 -c \"open('py.txt','w').write('x')\"",
        "sed -i s/hello/bye/ README.md",
        "dd if=/dev/zero of=dd.bin count=1",
        "ln -s README.md link",
        "mv README.md moved.md",
        f"touch {outside}/x",
        "sort --outp=README.md /dev/null",
        "chmod 000 README.md",
    ]
    (repo / ".mermaid").mkdir()  # Mermaid's own session files go there
    before = sorted(p.name for p in repo.iterdir())
    result = _run(repo, writes, "--safety", "read_only")
    assert result.code in (0, 1), result.stderr
    assert sorted(p.name for p in repo.iterdir()) == before
    assert (repo / "README.md").read_text() == "hello\n"
    assert os.stat(repo / "README.md").st_mode & 0o777 != 0
    assert list(outside.iterdir()) == []
    started = result.events[0]
    assert started["sandbox"]["mode"] == "read_only" and started["sandbox"]["filesystem"] is True


@needs_kernel
def test_read_only_runs_an_unknown_reading_command_inside_the_sandbox(repo: Path) -> None:
    (repo / "check.sh").write_text("#!/bin/sh\nwc -l README.md && echo CHECK-RAN\n")
    (repo / "check.sh").chmod(0o755)
    result = _run(repo, ["./check.sh"], "--safety", "read_only")
    assert result.code == 0, result.stderr
    assert "CHECK-RAN" in _outputs(result)[0]


@needs_kernel
def test_read_only_cannot_read_home_secrets(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE-KEY-MARKER\n")
    result = _run(repo, ["cat ~/.ssh/id_rsa"], "--safety", "read_only", env={"HOME": str(home)})
    assert "PRIVATE-KEY-MARKER" not in result.stdout
    assert "Permission denied" in _outputs(result)[0]


@needs_kernel
def test_mermaids_own_dirs_stay_unreadable_wherever_they_are(repo: Path, tmp_path: Path) -> None:
    """`MERMAID_CONFIG_DIR`/`MERMAID_DATA_DIR` moved out of the default places (which are among the
    home secrets) are hidden all the same: the config may carry credentials in headers."""
    home = tmp_path / "home"
    config, data = home / ".mcfg", tmp_path / "elsewhere" / "data"
    for place in (config, data):
        place.mkdir(parents=True)
        (place / "config.toml").write_text("# CONFIG-MARKER\n")
    commands = ["cat $MERMAID_CONFIG_DIR/config.toml", "cat $MERMAID_DATA_DIR/config.toml"]
    env = {"HOME": str(home), "MERMAID_CONFIG_DIR": str(config), "MERMAID_DATA_DIR": str(data)}
    for mode in ("read_only", "auto"):
        result = _run(repo, commands, "--safety", mode, env=env)
        assert "CONFIG-MARKER" not in result.stdout, mode
        assert all("Permission denied" in out for out in _outputs(result)), mode


@needs_kernel
def test_auto_writes_in_project_only_and_never_in_git_or_runner_files(repo: Path, tmp_path: Path) -> None:
    runner_file = tmp_path / "runner" / "github_env"
    runner_file.parent.mkdir()
    runner_file.write_text("")
    outside = tmp_path / "outside.txt"
    commands = [
        "echo ok > inside.txt",
        f"echo x > {outside}",
        "echo 'rm -rf /' > .git/hooks/pre-commit",
        f"echo BASH_ENV=/tmp/evil.sh >> {runner_file}",
        'echo "GITHUB_ENV=${GITHUB_ENV:-unset} TOKEN=${ACTIONS_RUNTIME_TOKEN:-unset}"',
    ]
    env = {"GITHUB_ENV": str(runner_file), "ACTIONS_RUNTIME_TOKEN": "rt-secret"}
    result = _run(repo, commands, "--safety", "auto", env=env, config=ALLOW_ALL)
    assert result.code == 0, result.stderr
    out = _outputs(result)
    assert (repo / "inside.txt").read_text() == "ok\n"
    assert not outside.exists() and "Permission denied" in out[1]
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert runner_file.read_text() == ""
    assert "GITHUB_ENV=unset TOKEN=unset" in out[4]


@needs_kernel
def test_no_network_blocks_tcp_to_a_local_listener(repo: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    accepted: list[object] = []
    server.settimeout(0.2)

    def accept() -> None:
        end = time.monotonic() + 30
        while time.monotonic() < end and not accepted:
            try:
                accepted.append(server.accept())
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    probe_cmd = (
        f"python3 -c \"import socket\ntry:\n socket.create_connection(('127.0.0.1', {port}), 2); "
        "print('NET' + '-OPEN')\nexcept OSError as e: print('NET-CLOSED', e)\""
    )
    result = _run(repo, [probe_cmd, f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo BASH-$((0))OPEN"], "--no-network",
                  config=ALLOW_ALL)  # fmt: skip
    accepted_before_stop = list(accepted)
    accepted.append(None)  # stop the thread
    thread.join(2)
    server.close()
    text = "\n".join(_outputs(result))
    assert "NET-CLOSED" in text and "NET-OPEN" not in text and "BASH-0OPEN" not in text
    assert accepted_before_stop == []
    assert result.events[0]["sandbox"]["network"] is False


@pytest.mark.parametrize("extra", [[], ["--sandbox=off"]])
def test_full_access_with_no_network_is_enforced_by_the_kernel(
    repo: Path, tmp_path: Path, extra: list[str]
) -> None:
    # DESIGN §4 step 1: --no-network sandboxes the shell without network in every mode; in
    # full_access the filesystem stays unrestricted. (--sandbox off turns the kernel part off.)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    outside = tmp_path / "outside.txt"
    probe_cmd = (
        f"python3 -c \"import socket\ntry:\n socket.create_connection(('127.0.0.1', {port}), 2); "
        "print('NET' + '-OPEN')\nexcept OSError as e: print('NET-CLOSED', e)\""
    )
    result = _run(
        repo, [probe_cmd, f"echo hi > {outside}"], "--no-network", "--safety", "full_access", *extra
    )
    server.close()
    text = "\n".join(_outputs(result))
    assert result.code == 0, result.stderr
    if extra:
        assert "NET-OPEN" in text  # proves the probe can fail: without the kernel part it connects
    else:
        assert "NET-CLOSED" in text and "NET-OPEN" not in text
        assert result.events[0]["sandbox"]["mode"] == "full_access+no_network"
    assert outside.read_text() == "hi\n"


@pytest.mark.parametrize("mode", ["auto", "full_access"])
def test_child_cannot_read_mermaid_environ(repo: Path, mode: str) -> None:
    secret = "sk-ant-MARKERVALUE0123456789"
    probes = [
        "if grep -qa MARKERVALUE /proc/$PPID/environ 2>/dev/null; then echo ENV-LEAK; else echo ENV-SAFE; fi",
        "if tr '\\0' '\\n' < /proc/$PPID/environ 2>/dev/null | grep -q MARKERVALUE; then echo TR-LEAK; "
        "else echo TR-SAFE; fi",
        "if env | grep -q MARKERVALUE; then echo OWN-LEAK; else echo OWN-SAFE; fi",
        "if grep -qa MARKERVALUE /proc/$PPID/cmdline; then echo CMD-LEAK; else echo CMD-SAFE; fi",
    ]
    result = _run(repo, probes, "--safety", mode, env={"ANTHROPIC_API_KEY": secret, "MY_SECRET": secret},
                  config=ALLOW_ALL)  # fmt: skip
    text = "\n".join(_outputs(result))
    for word in ("ENV", "TR", "OWN", "CMD"):
        assert f"{word}-SAFE" in text and f"{word}-LEAK" not in text, text


def test_kill_9_of_mermaid_leaves_no_background_child(repo: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    script = write_script(
        tmp_path / "script.jsonl",
        [
            call(
                "execute_command",
                {"command": f"sleep 300 & echo $! > {repo}/bg.pid; exec sleep 301", "mode": "background"},
                call_id="c1",
            ),  # fmt: skip
            call("execute_command", {"command": "sleep 200"}, call_id="c2"),
            say("done"),
        ],
    )
    (Path(os.environ["MERMAID_CONFIG_DIR"])).mkdir(parents=True, exist_ok=True)
    (Path(os.environ["MERMAID_CONFIG_DIR"]) / "config.toml").write_text(
        '[[safety.overrides]]\ntool = "execute_command"\ndecision = "allow"\n'
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "mermaid_cli", "exec", "--model", f"replay/{script}", "--format", "jsonl",
         "--safety", "full_access", "go"],
        cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (repo / "bg.pid").exists():
            time.sleep(0.1)
        assert (repo / "bg.pid").exists(), "background command never started"
        time.sleep(0.5)  # the foreground `sleep 200` is starting too
        grandchild = int((repo / "bg.pid").read_text())
        pids = [grandchild] + [int(p) for p in _children_of(proc.pid)]
        pidfile.write_text(" ".join(map(str, pids)))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
            time.sleep(0.1)
        assert not [p for p in pids if pid_alive(p)]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def _children_of(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []


def test_fail_closed_exits_2_before_the_first_model_call(repo: Path) -> None:
    result = _run(repo, ["touch RAN"], env={"MERMAID_SANDBOX_FORCE_UNAVAILABLE": "landlock"})
    assert result.code == 2
    assert not (repo / "RAN").exists()
    final = result.events[-1]
    assert final["type"] == "result" and final["exit_code"] == 2 and final["num_turns"] == 0
    assert "Landlock" in json.dumps(final) + result.stderr


def test_fail_closed_best_effort_warns_and_runs(repo: Path) -> None:
    result = _run(repo, ["touch RAN"], "--sandbox=best-effort", env={"MERMAID_SANDBOX_FORCE_UNAVAILABLE": "landlock"},
                  config=ALLOW_ALL)  # fmt: skip
    assert result.code == 0, result.stderr
    assert (repo / "RAN").exists()
    assert "sandbox degraded" in result.stderr
    errors = [e for e in result.events if e["type"] == "error"]
    assert errors and errors[0]["code"] == "sandbox_degraded" and "Landlock" in errors[0]["message"]
    assert result.events[0]["sandbox"]["filesystem"] is False


def test_sandbox_off_runs_without_a_sandbox(repo: Path) -> None:
    result = _run(repo, ["touch RAN"], "--sandbox=off", env={"MERMAID_SANDBOX_FORCE_UNAVAILABLE": "landlock"},
                  config=ALLOW_ALL)  # fmt: skip
    assert result.code == 0, result.stderr
    assert (repo / "RAN").exists()
    assert result.events[0]["sandbox"]["mode"] == "off"


@needs_kernel
def test_bare_sandbox_confines_full_access(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    result = _run(repo, [f"echo x > {outside}", "echo ok > in.txt"], "--sandbox", "--safety", "full_access")
    assert result.code == 0, result.stderr
    assert not outside.exists() and (repo / "in.txt").exists()
    assert result.events[0]["sandbox"]["mode"] == "auto"


@needs_kernel
def test_verify_commands_get_the_mode_confinement(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "verify-outside.txt"
    result = _run(repo, [], "--verify", f"echo x > {outside}", "--verify-attempts", "0")
    assert result.code == 1
    assert not outside.exists()


def test_project_config_cannot_switch_the_sandbox_off(repo: Path) -> None:
    (repo / ".mermaid").mkdir()
    (repo / ".mermaid" / "config.toml").write_text('[sandbox]\nmode = "off"\nwritable_roots = ["/"]\n')
    loaded = load_settings(project_root=repo, env={"MERMAID_CONFIG_DIR": str(repo / "nocfg")})
    assert loaded.settings.sandbox.mode == "auto"
    assert loaded.settings.sandbox.writable_roots == []
    assert any("sandbox.mode" in w for w in loaded.warnings)
    assert any("sandbox.writable_roots" in w for w in loaded.warnings)


def test_scrubbed_env_drops_ci_runner_files_even_when_allowed() -> None:
    base = {
        "GITHUB_ENV": "/x", "GITHUB_PATH": "/y", "GITHUB_OUTPUT": "/z", "GITHUB_STATE": "/s",
        "GITHUB_STEP_SUMMARY": "/t", "ACTIONS_ID_TOKEN_REQUEST_URL": "u", "ACTIONS_CACHE_URL": "c",
        "ACTIONS_RESULTS_URL": "r", "CI_JOB_JWT_V2": "j", "CI_REGISTRY_PASSWORD": "p", "CI_JOB_TOKEN": "t",
        "GITHUB_WORKSPACE": "/w", "PATH": "/usr/bin",
    }  # fmt: skip
    env = scrubbed_env(base, allow=["GITHUB_ENV", "CI_JOB_TOKEN"])
    assert env["GITHUB_WORKSPACE"] == "/w" and env["PATH"] == "/usr/bin"
    assert not set(base) - {"GITHUB_WORKSPACE", "PATH"} & set(env)
    assert not ({"GITHUB_ENV", "CI_JOB_TOKEN", "CI_JOB_JWT_V2", "ACTIONS_CACHE_URL"} & set(env))
