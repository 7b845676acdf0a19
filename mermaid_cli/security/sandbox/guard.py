"""The orphan guard: nothing started for the model outlives Mermaid, even after `kill -9`.

Owned here: a tiny watchdog process (`CGROUP_GUARD`, a POSIX sh script, with a cgroup; else this
file, run as a script with `python -I -S`, so it imports nothing from Mermaid) and `OrphanGuard`,
its parent-side handle. The guard gets no environment (Mermaid's holds the provider keys).

Why a separate process: a killed Mermaid can run no cleanup, and `PR_SET_PDEATHSIG` reaches only
direct children; a grandchild started with `sleep 300 &` (or `setsid`) is re-parented to init
and survives. The guard holds the read end of a pipe whose only write end is Mermaid's
(close-on-exec, so no child inherits it); when Mermaid exits for any reason the guard reads EOF
and kills what is left:

- cgroup v2 (preferred, when our cgroup is writable: root in CI containers, systemd delegation):
  each child moves itself into a per-run cgroup before exec (`cgroup.procs`, fd opened by the
  parent); descendants inherit it and a sandboxed child cannot leave it (Landlock refuses writes
  beneath /sys). On EOF the guard writes `cgroup.kill` (or SIGKILLs each member), waits until
  the cgroup is empty and removes it. Nothing escapes, `setsid` included.
- fallback (no writable cgroup): Mermaid registers each child's pid (the leader of its own
  session and process group) through the pipe; on EOF the guard SIGKILLs every process whose
  session or process group is a registered one, until none is left. A descendant that calls
  `setsid()` itself escapes this mode; `describe()` says which mode is in force.

Why not a PID namespace: the command would run as PID 1 (no default signal dispositions, so
SIGTERM is ignored), background jobs would die with their shell, and /proc would need a
remount; and it needs CAP_SYS_ADMIN or a user namespace anyway.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the guard process itself imports only the modules above (its RSS counts)
    import subprocess

_POLL = 0.02

#: The guard in cgroup mode, in POSIX sh: it only waits for EOF on stdin (the pipe) and then empties
#: and removes one cgroup, which takes no parsing, and sh runs it in ~1.7 MB where Python needs ~9
#: (the run's process tree is measured; issue 23). The session fallback scans /proc and parses
#: `stat` lines a process can shape with its name, so it stays in Python (`main` below).
#: Up to 500 rounds 20 ms apart, the 10 s the session guard allows too.
CGROUP_GUARD = r"""
cg=$1
gone() {
  if IFS= read -r _ < "$cg/cgroup.procs"; then
    if [ -e "$cg/cgroup.kill" ]; then
      echo 1 > "$cg/cgroup.kill"
    else
      while IFS= read -r pid; do kill -9 "$pid"; done < "$cg/cgroup.procs"
    fi
  fi 2>/dev/null
  [ ! -d "$cg" ] || rmdir "$cg" 2>/dev/null
}
cleanup() {
  trap '' TERM HUP INT
  n=0
  until gone; do
    n=$((n + 1))
    [ "$n" -ge 500 ] && break
    sleep 0.02
  done
  exit 0
}
trap cleanup TERM HUP INT
while IFS= read -r _; do :; done
cleanup
"""


def _members(sids: set[int]) -> list[int]:
    found: list[int] = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) < 4 or fields[0] in ("Z", "X"):
            continue
        pid = int(entry)
        if pid != me and (int(fields[2]) in sids or int(fields[3]) in sids):
            found.append(pid)
    return found


def _kill_sessions(sids: set[int], deadline: float) -> None:
    while sids and time.monotonic() < deadline:
        for sid in sids:
            with contextlib.suppress(OSError):
                os.killpg(sid, signal.SIGKILL)
        left = _members(sids)
        if not left:
            return
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(_POLL)


def main(argv: list[str]) -> int:
    """The session-mode guard: `argv[1]` is the pipe's read end; each line is a child's pid."""
    fd = int(argv[1])

    def _stop(signum: int, frame: object) -> None:
        raise SystemExit(0)

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _stop)
    sids: set[int] = set()
    pending = b""
    try:
        while True:
            data = os.read(fd, 4096)
            if not data:
                break
            pending += data
            *lines, pending = pending.split(b"\n")
            sids.update(int(x) for x in lines if x.strip().isdigit())
    finally:
        _kill_sessions(sids, time.monotonic() + 10.0)
    return 0


def _wait_exit(process: subprocess.Popen[bytes], timeout: float) -> None:
    """Reap `process` within `timeout`. `Popen.wait(timeout)` polls with doubling sleeps, which
    adds up to its own run time again; a pidfd wakes the moment the process exits."""
    import select
    import subprocess

    try:
        pidfd = os.pidfd_open(process.pid)
    except OSError:  # already reaped, or a kernel before 5.3
        pidfd = -1
    if pidfd < 0:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout)
        return
    try:
        select.select([pidfd], [], [], timeout)
    finally:
        os.close(pidfd)
    process.poll()  # reaps it when it exited; a guard still running after `timeout` is left


def _rejoin(procs: str) -> None:
    """Write "0" (this process) to `procs`, the cgroup this process is in already."""
    with contextlib.suppress(OSError):
        fd = os.open(procs, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)


class OrphanGuard:
    """Parent-side handle: `OrphanGuard.start(cgroup_parent)` once per run, `close()` at the end.

    `cgroup_parent` is a writable cgroup v2 directory (`KernelSupport.cgroup`) or None for the
    session-tracking fallback. Spawn children from a long-lived thread (the event loop's), since
    their PR_SET_PDEATHSIG fires when the *thread* that forked them exits.
    """

    def __init__(self, write_fd: int, process: subprocess.Popen[bytes], cgroup: str | None) -> None:
        self._write_fd: int | None = write_fd
        self._process = process
        self.cgroup = cgroup
        self._warming: threading.Thread | None = None
        self.cgroup_procs_fd = -1
        if cgroup is not None:
            self.cgroup_procs_fd = os.open(os.path.join(cgroup, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)

    @property
    def mode(self) -> str:
        return "cgroup" if self.cgroup is not None else "session"

    @property
    def pid(self) -> int:
        return self._process.pid

    @classmethod
    def start(cls, cgroup_parent: str | None) -> OrphanGuard:
        import secrets
        import subprocess

        cgroup = None
        if cgroup_parent is not None:
            candidate = os.path.join(cgroup_parent, f"mermaid-{os.getpid()}-{secrets.token_hex(4)}")
            try:
                os.mkdir(candidate)
                cgroup = candidate
            except OSError:
                cgroup = None
        read_fd, write_fd = os.pipe()  # both close-on-exec: no child inherits the write end
        try:
            # No environment: same-uid processes can read a dumpable process's /proc/PID/environ,
            # and Mermaid's holds the provider keys.
            pass_fds: tuple[int, ...]
            if cgroup is not None:
                argv = ["/bin/sh", "-c", CGROUP_GUARD, "mermaid-orphan-guard", cgroup]
                stdin, pass_fds, env = read_fd, (), {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
            else:
                argv = [sys.executable, "-I", "-S", os.path.abspath(__file__), str(read_fd)]
                stdin, pass_fds, env = subprocess.DEVNULL, (read_fd,), {}
            process = subprocess.Popen(
                argv,
                stdin=stdin,
                pass_fds=pass_fds,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
        except BaseException:
            os.close(write_fd)
            if cgroup is not None:
                with contextlib.suppress(OSError):
                    os.rmdir(cgroup)
            raise
        finally:
            os.close(read_fd)
        try:
            guard = cls(write_fd, process, cgroup)
        except OSError:
            os.close(write_fd)
            process.wait()
            raise
        # The run's first command usually comes within a few grace periods of the start, so the
        # lock is warmed now as well as when a command is called: a warm-up started only then
        # was still waiting in the kernel when the child came to join (bash spawned in 5-19 ms
        # here, against 2.6-6 ms with this one; issue 23). Harmless when no command follows.
        guard.warm_join()
        return guard

    def empty(self) -> bool:
        """No process the run started for the model is alive: the run's cgroup lists none (every
        one joins it before exec, and its descendants cannot leave). False without a cgroup or
        when it cannot be read."""
        if self.cgroup is None:
            return False
        try:
            with open(os.path.join(self.cgroup, "cgroup.procs"), "rb") as procs:
                return not procs.read(1)
        except OSError:
            return False

    def warm_join(self) -> None:
        """A child is about to join the cgroup: take the kernel's cgroup-migration lock now, on a
        thread, so that the child's own join (its pre-exec step) finds it warm.

        The first migration after a quiet spell waits in the kernel for an RCU grace period
        (`cgroup_threadgroup_rwsem`'s rcu_sync: 7-15 ms measured here), and the child cannot exec
        before it has joined: the wait was on the path of every first command of a turn (issue 23).
        The lock is taken by moving Mermaid into the cgroup it is already in (our own cgroup, the
        run cgroup's parent), which changes nothing; the write blocks only this thread (the GIL
        is released), while the gate judges the call. Any error just leaves the child to wait.
        """
        if self.cgroup is None or (self._warming is not None and self._warming.is_alive()):
            return
        own = os.path.join(os.path.dirname(self.cgroup), "cgroup.procs")
        self._warming = threading.Thread(target=_rejoin, args=(own,), name="mermaid-cgroup-warm", daemon=True)
        self._warming.start()

    def register(self, pid: int) -> None:
        """Record a spawned child (needed by the session fallback; harmless with a cgroup)."""
        if self._write_fd is not None and self.cgroup is None:
            os.write(self._write_fd, f"{pid}\n".encode())

    def stop(self) -> bool:
        """Tell the guard the run is over; True when nothing the run started is left (its cgroup
        was empty and is removed). The usual end: removing the empty cgroup here leaves the guard
        nothing to do but exit, where its own `rmdir` (a fork and exec) and the wait for it took
        4-20 ms of every run's exit (issue 23). Otherwise the guard kills what is left."""
        emptied = False
        if self.cgroup_procs_fd >= 0:
            os.close(self.cgroup_procs_fd)
            self.cgroup_procs_fd = -1
        if self.cgroup is not None and self._write_fd is not None and self.empty():
            with contextlib.suppress(OSError):
                os.rmdir(self.cgroup)
                emptied = True
        if self._write_fd is not None:
            os.close(self._write_fd)
            self._write_fd = None
        return emptied

    def close(self, timeout: float = 10.0) -> None:
        """Kill everything still running under the guard and wait for the guard to finish."""
        self.stop()
        _wait_exit(self._process, timeout)

    def describe(self) -> dict[str, object]:
        return {"mode": self.mode, "cgroup": self.cgroup, "pid": self.pid}


if __name__ == "__main__":
    try:
        status = main(sys.argv)
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else 0
    # Nothing to flush: skipping the interpreter's teardown takes ~10 ms off every run's end,
    # which waits for this process.
    os._exit(status)
