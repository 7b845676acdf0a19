"""A child process in its own session, read by the event loop, killable as a whole tree.

Why not `asyncio.create_subprocess_exec`: its `wait()` only returns once every pipe is closed, so
a grandchild that inherited stdout (`sleep 30 &`) would hold the tool hostage. Here the exit is
seen through a pidfd (or polling) independently of the pipes, and the pipes can be abandoned.

The tree is the process group *and* the session the child leads (`start_new_session=True`), so
a descendant that moved to its own process group is still found (via /proc) and killed. Only a
descendant that starts a new session of its own escapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mermaid_cli.security.sandbox import PreparedSandbox

OnOutput = Callable[[int, bytes], None]  # (1 = stdout | 2 = stderr, data)
OnEvent = Callable[[], None]


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes whose session or process group is `sid`; [] where /proc is absent."""
    members: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return members
    me = os.getpid()
    for entry in entries:
        if not entry.isdigit():
            continue
        # os.open/os.read, not Path.read_text: ~10x cheaper, and this runs twice per command over
        # every process on the machine (~5 ms with 80 of them, before)
        try:
            fd = os.open(f"/proc/{entry}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            stat = os.read(fd, 4096)
        except OSError:
            continue
        finally:
            os.close(fd)
        # "pid (comm) state ppid pgrp session ..." where comm may contain spaces and parens
        fields = stat[stat.rfind(b")") + 2 :].split(None, 4)
        if len(fields) < 4 or fields[0] in (b"Z", b"X"):
            continue
        pid = int(entry)
        if pid != me and (int(fields[2]) == sid or int(fields[3]) == sid):
            members.append(pid)
    return members


def signal_tree(sid: int, sig: int) -> None:
    """Send `sig` to the process group `sid` and to every other member of session `sid`."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(sid, sig)
    for pid in session_members(sid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def tree_alive(sid: int) -> bool:
    if Path("/proc/self/stat").exists():
        return bool(session_members(sid))
    try:
        os.killpg(sid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class _PipeReader(asyncio.Protocol):
    def __init__(self, child: Child, stream: int) -> None:
        self._child = child
        self._stream = stream

    def data_received(self, data: bytes) -> None:
        self._child._on_output(self._stream, data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._child._pipe_closed(self._stream)


class Child:
    """Use `await Child.spawn(...)`; always `await aclose()` (or `kill_now()`) at the end."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        on_output: OnOutput,
        on_event: OnEvent,
        sandbox: PreparedSandbox | None = None,
    ) -> None:
        self.popen = popen
        self._sandbox = sandbox
        self.pid = popen.pid
        self.sid = popen.pid  # leader of its own session and process group
        self._on_output_cb = on_output
        self._on_event = on_event
        self._exited = asyncio.Event()
        self._eof = asyncio.Event()
        self._open_pipes = {1, 2}
        self._transports: list[asyncio.BaseTransport] = []
        self._pidfd: int | None = None
        self._poller: asyncio.Task[None] | None = None
        self._loop = asyncio.get_running_loop()

    @classmethod
    async def spawn(
        cls,
        argv: list[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        on_output: OnOutput,
        on_event: OnEvent = lambda: None,
        sandbox: PreparedSandbox | None = None,
    ) -> Child:
        """Start `argv`; with `sandbox`, its pre-exec step confines the child before exec.

        Call from the event loop's thread: a sandboxed child's PR_SET_PDEATHSIG fires when the
        thread that forked it exits.
        """
        popen = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
            preexec_fn=sandbox.preexec_fn if sandbox is not None else None,
            pass_fds=sandbox.pass_fds if sandbox is not None else (),
        )
        if sandbox is not None:
            sandbox.register(popen.pid)
        child = cls(popen, on_output, on_event, sandbox)
        try:
            await child._attach()
        except BaseException:  # cancelled (or failed) half-way: leave nothing running
            child.kill_now()
            raise
        return child

    async def _attach(self) -> None:
        assert self.popen.stdout is not None and self.popen.stderr is not None
        for stream, pipe in ((1, self.popen.stdout), (2, self.popen.stderr)):
            transport, _ = await self._loop.connect_read_pipe(
                functools.partial(_PipeReader, self, stream), pipe
            )
            self._transports.append(transport)
        try:
            self._pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            self._pidfd = None
        if self._pidfd is not None:
            self._loop.add_reader(self._pidfd, self._pidfd_ready)
        else:
            self._poller = self._loop.create_task(self._poll_exit())

    # -- callbacks -------------------------------------------------------------------------------

    def _on_output(self, stream: int, data: bytes) -> None:
        self._on_output_cb(stream, data)
        self._on_event()

    def _pipe_closed(self, stream: int) -> None:
        self._open_pipes.discard(stream)
        if not self._open_pipes:
            self._eof.set()
        self._on_event()

    def _pidfd_ready(self) -> None:
        if self.popen.poll() is None:  # spurious wake-up; the pidfd stays readable once exited
            return
        self._drop_pidfd()
        self._mark_exited()

    def _drop_pidfd(self) -> None:
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None

    async def _poll_exit(self) -> None:
        while self.popen.poll() is None:
            await asyncio.sleep(0.05)
        self._mark_exited()

    def _mark_exited(self) -> None:
        if not self._exited.is_set():
            self._exited.set()
            self._on_event()

    # -- state -----------------------------------------------------------------------------------

    @property
    def returncode(self) -> int | None:
        """Exit status of the leader (negative: killed by that signal); None while it runs."""
        return self.popen.returncode if self._exited.is_set() else None

    @property
    def exited(self) -> bool:
        return self._exited.is_set()

    @property
    def eof(self) -> bool:
        return self._eof.is_set()

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait for the leader to exit; False when `timeout` passed first."""
        return await _wait_event(self._exited, timeout)

    async def wait_eof(self, timeout: float | None = None) -> bool:
        """Wait until both pipes are closed; False when `timeout` passed first."""
        return await _wait_event(self._eof, timeout)

    def tree_alive(self) -> bool:
        # an empty run cgroup answers for every session at once: no scan of /proc (~1 ms a scan,
        # twice a command, on the path between two turns)
        if not self.exited:
            return True
        if self._sandbox is not None and self._sandbox.nothing_alive():
            return False
        return tree_alive(self.sid)

    # -- ending ----------------------------------------------------------------------------------

    async def terminate_tree(self, grace: float = 2.0) -> None:
        """SIGTERM the whole tree, then SIGKILL whatever is left after `grace` seconds."""
        signal_tree(self.sid, signal.SIGTERM)
        if await self._wait_tree_gone(grace):
            return
        signal_tree(self.sid, signal.SIGKILL)
        await self._wait_tree_gone(1.0)

    async def _wait_tree_gone(self, timeout: float) -> bool:
        deadline = self._loop.time() + timeout
        while True:
            if self.exited and not tree_alive(self.sid):
                return True
            remaining = deadline - self._loop.time()
            if remaining <= 0:
                return False
            await _wait_event(self._exited, min(0.05, remaining))

    def kill_now(self) -> None:
        """Synchronous last resort: SIGKILL the tree and drop the pipes."""
        if self.tree_alive():
            signal_tree(self.sid, signal.SIGKILL)
        self._close_handles()

    async def aclose(self) -> None:
        """Kill anything of the tree still running, reap the leader, close pipes and handles."""
        if self.tree_alive():
            signal_tree(self.sid, signal.SIGKILL)
            await self._wait_tree_gone(1.0)
        self._close_handles()
        await asyncio.sleep(0)  # let the transports deliver connection_lost

    def _close_handles(self) -> None:
        for transport in self._transports:
            with contextlib.suppress(RuntimeError):  # the loop may already be closed
                transport.close()
        self._drop_pidfd()
        if self._poller is not None:
            self._poller.cancel()
        if self.popen.poll() is not None:
            self._mark_exited()


async def _wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    if event.is_set():
        return True
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except TimeoutError:
        return False
    return True
