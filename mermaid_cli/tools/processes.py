"""Background processes of one run and the `background_process` tool that reaches them.

`execute_command` with `mode="background"` starts a process here and returns its id (`bg-1`,
`bg-2`... counted per run). Output goes to an in-memory ring (newest 1 MiB, nothing on disk, so
no secrets linger in temp files). The registry lives in `ctx.background`; the tool can
reach only those processes, never a raw pid, which is why it needs no approval.

Every process is stopped when the run ends, however it ends: `registry_for` registers
`stop_all` in `ctx.cleanups`, and a `weakref.finalize` (which also runs at interpreter exit)
SIGKILLs any tree still registered as a last resort.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from mermaid_cli.core.types import ToolResult
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext
from mermaid_cli.tools.proctree import Child, signal_tree
from mermaid_cli.tools.termtext import clean_bytes

if TYPE_CHECKING:
    from mermaid_cli.security.sandbox import PreparedSandbox

RING_BYTES = 1024 * 1024
READ_BYTES = 32 * 1024
WAIT_DEFAULT_SECS = 300.0
WAIT_MAX_SECS = 3600.0
MAX_RUNNING = 32
STOP_GRACE_SECS = 2.0
# Pattern search re-reads this much already-searched output, so a match across chunks is found.
_SEARCH_OVERLAP = 4096


class OutputRing:
    """The newest `cap` bytes of a stream, addressed by absolute offsets."""

    def __init__(self, cap: int = RING_BYTES) -> None:
        self._cap = cap
        self._buf = bytearray()
        self.start = 0  # absolute offset of _buf[0]
        self.total = 0

    def append(self, data: bytes) -> None:
        self._buf += data
        self.total += len(data)
        if len(self._buf) > 2 * self._cap:  # trim in batches: del on a bytearray front is a memmove
            cut = len(self._buf) - self._cap
            del self._buf[:cut]
            self.start += cut

    def slice(self, begin: int, end: int | None = None) -> bytes:
        end = self.total if end is None else end
        begin = max(begin, self.start, self.total - self._cap)
        return bytes(self._buf[begin - self.start : end - self.start]) if begin < end else b""


@dataclass
class BackgroundJob:
    """A background process the model started, and its output so far."""

    id: str
    command: str
    cwd: Path
    ring: OutputRing = field(default_factory=OutputRing)
    child: Child | None = None
    read_pos: int = 0
    started: float = field(default_factory=time.monotonic)
    stopped: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def notify(self) -> None:
        # Waiters hold the current event; swap in a fresh one so each change wakes them once.
        event, self.changed = self.changed, asyncio.Event()
        event.set()

    @property
    def running(self) -> bool:
        return self.child is not None and not self.child.exited

    @property
    def pid(self) -> int:
        return self.child.pid if self.child else 0

    @property
    def exit_code(self) -> int | None:
        """Shell style: 128+N when signal N ended it; None while running."""
        rc = self.child.returncode if self.child else None
        return 128 - rc if rc is not None and rc < 0 else rc

    def status(self) -> str:
        if self.running:
            return f"running for {time.monotonic() - self.started:.0f} s"
        rc = self.child.returncode if self.child else None
        how = "stopped" if self.stopped else "exited"
        if rc is not None and rc < 0:
            with contextlib.suppress(ValueError):
                return f"{how} (killed by {signal.Signals(-rc).name})"
        return f"{how} (exit code {rc})"

    def take_unread(self) -> tuple[str, int]:
        """Output since the last read (newest READ_BYTES at most) and how many bytes were skipped."""
        total = self.ring.total
        begin = max(self.read_pos, total - READ_BYTES)
        data = self.ring.slice(begin, total)
        skipped = total - len(data) - self.read_pos
        self.read_pos = total
        return clean_bytes(data), skipped


def _kill_trees(sids: set[int]) -> None:
    for sid in list(sids):
        signal_tree(sid, signal.SIGKILL)
    sids.clear()


class ProcessRegistry:
    """The background processes of one run."""

    def __init__(self) -> None:
        self.jobs: dict[str, BackgroundJob] = {}
        self._counter = 0
        # Shared with the finaliser, which must not hold a reference to the registry itself.
        self._live_sids: set[int] = set()
        self._finalizer = weakref.finalize(self, _kill_trees, self._live_sids)

    def get(self, job_id: str) -> BackgroundJob | None:
        return self.jobs.get(job_id)

    async def start(
        self, command: str, *, cwd: Path, env: Mapping[str, str], sandbox: PreparedSandbox | None = None
    ) -> ToolResult:
        running = sum(1 for job in self.jobs.values() if job.running)
        if running >= MAX_RUNNING:
            return ToolResult.error(
                f"{running} background processes are already running; stop one with background_process"
            )
        self._counter += 1
        job = BackgroundJob(id=f"bg-{self._counter}", command=command, cwd=cwd)
        try:
            job.child = await Child.spawn(
                ["bash", "-c", command],
                cwd=cwd,
                env=env,
                on_output=lambda _stream, data: job.ring.append(data),
                on_event=job.notify,
                sandbox=sandbox,
            )
        except OSError as exc:
            return ToolResult.error(f"could not start the command: {exc}")
        self.jobs[job.id] = job
        self._live_sids.add(job.child.sid)
        return ToolResult(
            content=(
                f"Started {job.id} (pid {job.pid}) in the background. "
                f"Use background_process with id {job.id!r} to read, wait for or stop it."
            ),
            summary=f"started {job.id} (pid {job.pid})",
            metadata={"background_id": job.id, "pid": job.pid},
        )

    async def stop(self, job: BackgroundJob) -> None:
        if job.child is None:
            return
        if job.child.tree_alive():
            job.stopped = job.running
            await job.child.terminate_tree(STOP_GRACE_SECS)
        await job.child.wait_eof(0.5)
        await job.child.aclose()
        self._live_sids.discard(job.child.sid)
        job.notify()

    async def stop_all(self) -> None:
        """Stop every process of this run (the run-end cleanup)."""
        await asyncio.gather(*(self.stop(job) for job in self.jobs.values()), return_exceptions=True)
        _kill_trees(self._live_sids)


def registry_for(ctx: ToolContext) -> ProcessRegistry:
    """This run's registry, created (and its cleanup registered) on first use."""
    registry = ctx.background
    if registry is None:
        registry = ctx.background = ProcessRegistry()
        ctx.cleanups.append(registry.stop_all)
    return registry


# -- the tool ----------------------------------------------------------------------------------


class BackgroundProcessArgs(ToolArgs):
    action: Literal["read", "wait", "stop", "list"] = Field(
        description="read: new output; wait: until exit, pattern or timeout; stop: kill it; list: all."
    )
    id: str | None = Field(default=None, description="Process id from execute_command, e.g. bg-1.")
    pattern: str | None = Field(
        default=None, description="wait: regex (multiline) to wait for in new output."
    )
    timeout_secs: float | None = Field(
        default=None, gt=0, description="wait: seconds to wait at most (default 300, max 3600)."
    )


class BackgroundProcess(Tool):
    name = "background_process"
    description = (
        "Read, wait for, stop or list the background processes started with execute_command "
        "mode=background in this run."
    )
    Args = BackgroundProcessArgs
    category = "session"  # reads, waits for or stops only processes this run started: never gated

    async def run(self, args: BackgroundProcessArgs, ctx: ToolContext) -> ToolResult:
        registry = registry_for(ctx)
        if args.action == "list":
            return _list(registry)
        if not args.id:
            return ToolResult.error(f"action {args.action!r} needs an id (e.g. bg-1)")
        job = registry.get(args.id)
        if job is None:
            known = ", ".join(registry.jobs) or "none"
            return ToolResult.error(f"unknown background process {args.id!r}; this run's processes: {known}")
        if args.action == "read":
            return _report(job, [])
        if args.action == "stop":
            was_running = job.child is not None and job.child.tree_alive()
            await registry.stop(job)
            note = "stopped the process tree" if was_running else "it had already finished"
            return _report(job, [note])
        return await _wait(job, args.pattern, args.timeout_secs)


async def _wait(job: BackgroundJob, pattern: str | None, timeout_secs: float | None) -> ToolResult:
    notes: list[str] = []
    timeout = timeout_secs or WAIT_DEFAULT_SECS
    if timeout > WAIT_MAX_SECS:
        notes.append(f"timeout {timeout:g} s clamped to the maximum {WAIT_MAX_SECS:g} s")
        timeout = WAIT_MAX_SECS
    try:
        regex = re.compile(pattern, re.MULTILINE) if pattern else None  # ^ and $ match per line
    except re.error as exc:
        return ToolResult.error(f"invalid pattern {pattern!r}: {exc}")
    assert job.child is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    searched = job.read_pos
    while True:
        event = job.changed
        exited = job.child.exited
        if exited:
            await job.child.wait_eof(0.5)  # collect what was still in the pipes
        if regex is not None:
            begin = max(job.read_pos, searched - _SEARCH_OVERLAP)
            end = job.ring.total
            if regex.search(clean_bytes(job.ring.slice(begin, end))):
                notes.append(f"pattern {pattern!r} matched")
                break
            searched = end
        if exited:
            notes.append("the process exited" + (f" before {pattern!r} appeared" if regex else ""))
            break
        remaining = deadline - loop.time()
        if remaining <= 0:
            notes.append(
                f"waited {timeout:g} s; " + (f"{pattern!r} did not appear" if regex else "still running")
            )
            break
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), remaining)
    return _report(job, notes)


def _report(job: BackgroundJob, notes: list[str]) -> ToolResult:
    text, skipped = job.take_unread()
    lines = [f"{job.id} (pid {job.pid}): {job.status()}"]
    lines += [f"[{note}]" for note in notes]
    if skipped:
        lines.append(f"[{skipped} older bytes of output not shown]")
    lines.append(text.rstrip("\n") if text.strip() else "(no new output)")
    return ToolResult(
        content="\n".join(lines),
        summary=f"{job.id}: {job.status()}",
        metadata={"background_id": job.id, "running": job.running, "exit_code": job.exit_code},
    )


def _list(registry: ProcessRegistry) -> ToolResult:
    if not registry.jobs:
        return ToolResult(content="No background processes in this run.", summary="no background processes")
    lines = [
        f"{job.id}  pid {job.pid}  {job.status()}  {job.command[:120]}" for job in registry.jobs.values()
    ]
    running = sum(1 for job in registry.jobs.values() if job.running)
    return ToolResult(
        content="\n".join(lines), summary=f"{len(lines)} background processes, {running} running"
    )
