"""After `kill -9` of a real parent that spawned through the sandbox API, nothing it started
survives: not the child, not a backgrounded grandchild, not (with a cgroup) a `setsid` one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from mermaid_cli.security.sandbox import OrphanGuard, probe

SUPPORT = probe(env={})
pytestmark = pytest.mark.skipif(
    SUPPORT.landlock_abi < 3 or not SUPPORT.seccomp_filter, reason="no Landlock/seccomp"
)

PARENT = r"""
import subprocess, sys, time
from pathlib import Path
from mermaid_cli.security.sandbox import OrphanGuard, for_mode, prepare, probe
mode, base, script = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
support = probe()
guard = OrphanGuard.start(support.cgroup)
policy = None if mode == "full_access" else for_mode(
    "auto", project_root=base / "proj", temp_dir=base / "priv", home=base / "home")
sb = prepare(policy, guard=guard, support=support)
p = subprocess.Popen(["/bin/bash", "-c", script], cwd=base, env={"PATH": "/usr/bin:/bin"},
                     start_new_session=True, close_fds=True, **sb.popen_kwargs())
sb.register(p.pid)
print(guard.mode, flush=True)
time.sleep(300)
"""


def marked(marker: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            pids.append(int(entry))
    return pids


def wait_for(cond: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize(
    ("mode", "force", "expect_guard", "with_setsid"),
    [
        ("auto", "", "cgroup", True),
        ("full_access", "", "cgroup", True),
        ("auto", "cgroup", "session", False),
        ("full_access", "cgroup", "session", False),
    ],
)
def test_kill_9_leaves_nothing(
    tmp_path: Path, mode: str, force: str, expect_guard: str, with_setsid: bool
) -> None:
    if expect_guard == "cgroup" and SUPPORT.cgroup is None:
        pytest.skip("no writable cgroup v2 here")
    for sub in ("proj", "priv", "home"):
        (tmp_path / sub).mkdir()
    marker = f"mermaid-orphan-{uuid.uuid4().hex}"
    parts = [f"(exec -a {marker}-bg sleep 300) &", f"(nohup bash -c 'exec -a {marker}-nohup sleep 300' &)"]
    if with_setsid:
        parts.append(f"setsid bash -c 'exec -a {marker}-setsid sleep 300' &")
    script = "\n".join([*parts, f"exec -a {marker}-leader sleep 300"])
    env = {**os.environ, "MERMAID_SANDBOX_FORCE_UNAVAILABLE": force}
    parent = subprocess.Popen([sys.executable, "-c", PARENT, mode, str(tmp_path), script], env=env,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline().strip() == expect_guard
        expected = 3 + with_setsid
        assert wait_for(lambda: len(marked(marker)) >= expected, 10), marked(marker)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        assert wait_for(lambda: not marked(marker), 10), f"survivors: {marked(marker)}"
    finally:
        for pid in marked(marker):
            os.kill(pid, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()


@pytest.mark.parametrize("with_cgroup", [True, False])
def test_the_guard_holds_no_secret_and_cleans_up_on_sigterm(
    with_cgroup: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard is dumpable (its /proc/PID/environ is readable by any same-uid process), so it
    gets no environment; SIGTERM (a container stopping) still makes it kill and clean up."""
    if with_cgroup and SUPPORT.cgroup is None:
        pytest.skip("no writable cgroup v2 here")
    secret = f"sk-guard-{uuid.uuid4().hex}"
    monkeypatch.setenv("MERMAID_TEST_PROVIDER_KEY", secret)
    guard = OrphanGuard.start(SUPPORT.cgroup if with_cgroup else None)
    try:
        assert guard.mode == ("cgroup" if with_cgroup else "session")
        assert wait_for(lambda: Path(f"/proc/{guard.pid}/environ").exists(), 5)
        time.sleep(0.1)  # past exec: environ is the guard's own, not the forked parent's
        assert secret.encode() not in Path(f"/proc/{guard.pid}/environ").read_bytes()
        if with_cgroup:
            assert guard.cgroup is not None
            procs_fd = guard.cgroup_procs_fd
            child = subprocess.Popen(["sleep", "300"], preexec_fn=lambda: os.write(procs_fd, b"0"))
            os.kill(guard.pid, signal.SIGTERM)
            assert child.wait(10) == -signal.SIGKILL  # killed by the guard, through the cgroup
            assert wait_for(lambda: not os.path.exists(str(guard.cgroup)), 10)
        else:
            os.kill(guard.pid, signal.SIGTERM)
        assert wait_for(lambda: not Path(f"/proc/{guard.pid}/stat").exists() or _zombie(guard.pid), 10)
    finally:
        guard.close(timeout=5)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


@pytest.mark.parametrize("survivor", [False, True])
def test_a_normal_close_leaves_no_cgroup_no_guard_and_no_survivor(survivor: bool) -> None:
    """The usual end (the cgroup already empty) is handled in-process; a process still in the
    cgroup is killed by the guard as before. Either way close() returns with nothing left."""
    if SUPPORT.cgroup is None:
        pytest.skip("no writable cgroup v2 here")
    guard = OrphanGuard.start(SUPPORT.cgroup)
    assert guard.cgroup is not None
    cgroup = guard.cgroup
    child = None
    if survivor:
        procs_fd = guard.cgroup_procs_fd
        child = subprocess.Popen(["sleep", "300"], preexec_fn=lambda: os.write(procs_fd, b"0"))
        assert wait_for(lambda: Path(f"/proc/{child.pid}/cgroup").read_text().strip().endswith(
            os.path.basename(cgroup)), 5)  # fmt: skip
    guard.close(timeout=10)
    assert not os.path.exists(cgroup)
    assert _zombie(guard.pid) or not Path(f"/proc/{guard.pid}").exists()
    if child is not None:
        assert child.wait(10) == -signal.SIGKILL


def _warming_threads() -> list[object]:
    import threading

    return [t for t in threading.enumerate() if t.name == "mermaid-cgroup-warm"]


def test_warming_the_join_leaves_mermaid_where_it_was_and_children_still_join() -> None:
    """`warm_join` takes the migration lock by moving Mermaid into the cgroup it is in already:
    Mermaid stays put (it must never land in the run cgroup the guard empties), one warm-up runs
    at a time, and the next child still joins the run cgroup."""
    if SUPPORT.cgroup is None:
        pytest.skip("no writable cgroup v2 here")
    before = Path("/proc/self/cgroup").read_text()
    guard = OrphanGuard.start(SUPPORT.cgroup)
    child = None
    try:
        assert guard.cgroup is not None
        guard.warm_join()
        guard.warm_join()
        assert len(_warming_threads()) <= 1
        for thread in _warming_threads():
            thread.join(10)  # type: ignore[attr-defined]
        assert not _warming_threads()
        assert Path("/proc/self/cgroup").read_text() == before
        procs_fd = guard.cgroup_procs_fd
        child = subprocess.Popen(["sleep", "300"], preexec_fn=lambda: os.write(procs_fd, b"0"))
        name = os.path.basename(guard.cgroup)
        assert wait_for(lambda: Path(f"/proc/{child.pid}/cgroup").read_text().strip().endswith(name), 5)
    finally:
        guard.close(timeout=10)
    assert child is not None and child.wait(10) == -signal.SIGKILL


_START_PROBE = r"""
import json, os, sys, threading
seen = []
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].endswith("cgroup.procs"):
        seen.append([args[0], bool(args[2] & (os.O_WRONLY | os.O_RDWR))])
sys.addaudithook(hook)
from mermaid_cli.security.sandbox import OrphanGuard
guard = OrphanGuard.start(sys.argv[1])
for thread in threading.enumerate():
    if thread.name == "mermaid-cgroup-warm":
        thread.join(10)
guard.close(timeout=10)
print(json.dumps([guard.cgroup, seen]))
"""


def test_starting_the_guard_warms_the_join_for_the_runs_first_command() -> None:
    """The first command of a run comes soon after the guard starts: the start itself takes the
    migration lock (a write to Mermaid's own cgroup.procs), so that command's join finds it warm
    even when the warm-up at the call would come too late."""
    if SUPPORT.cgroup is None:
        pytest.skip("no writable cgroup v2 here")
    proc = subprocess.run(
        [sys.executable, "-c", _START_PROBE, SUPPORT.cgroup], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    run_cgroup, seen = json.loads(proc.stdout)
    assert run_cgroup is not None
    own = os.path.join(SUPPORT.cgroup, "cgroup.procs")
    assert [own, True] in seen  # the warm-up: Mermaid into the cgroup it is in
    assert [os.path.join(run_cgroup, "cgroup.procs"), True] in seen  # the guard's fd for children


def test_without_a_cgroup_there_is_nothing_to_warm() -> None:
    guard = OrphanGuard.start(None)
    try:
        assert guard.mode == "session"
        guard.warm_join()
        assert not _warming_threads()
    finally:
        guard.close(timeout=10)
