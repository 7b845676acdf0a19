"""Run a batch: each task a `mermaid exec --json` child in its own workspace, `--jobs` at a time.

A task is a normal run (its own session, events and diff); the batch only decides when to start
one and what it may still spend. The budget is the batch's: `--max-cost` and `--timeout` stop new
tasks from starting once spent, and each task starts with at most what is left (so a running
task stops itself at the line, exit 4 or 124). Without `--keep-going` the first failed task stops
new ones. SIGINT/SIGTERM are passed to every running task, whose own handlers end their runs with
a framed `result`, and the batch then writes its results and exits 130/143.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mermaid_cli.core.errors import EXIT_CODES
from mermaid_cli.core.gather import gather_all
from mermaid_cli.run.batch.plan import Shard, shard_tasks
from mermaid_cli.run.batch.results import BatchHeader, BatchSummary, TaskResult, line, summarize
from mermaid_cli.run.batch.tasks import BatchTask, TaskList
from mermaid_cli.run.batch.workspace import (
    Workspace,
    git_root,
    make_workspace,
    remove_workspace,
    scratch_parent,
    task_patch,
)
from mermaid_cli.run.worktree import WorktreeError

#: a task that outlives its own --timeout by this much is killed (its run should have ended)
KILL_GRACE_SECS = 30.0
#: how long a task's run gets to end after SIGTERM when the batch stops without it
CANCEL_GRACE_SECS = 10.0


@dataclass(frozen=True)
class BatchOptions:
    """What `mermaid batch` runs, where, and how many at once."""

    tasks: TaskList
    project: Path
    out_dir: Path
    jobs: int = 1
    shard: Shard | None = None
    keep_going: bool = False
    max_cost: float | None = None
    timeout: float | None = None
    #: defaults for every task (a task's own key wins)
    model: str | None = None
    safety: str | None = None
    config_overrides: tuple[str, ...] = ()
    allow_untrusted_tools: bool = False
    keep_workspaces: bool = False


@dataclass
class _Budget:
    """The batch's cost and time budget, and why it stopped starting tasks."""

    max_cost: float | None
    deadline: float | None  # time.monotonic()
    started_at: float  # time.monotonic() when the batch started
    spent: float = 0.0
    stop_reason: tuple[str, str] | None = None  # (status, why) once no new task may start

    def remaining_cost(self) -> float | None:
        return None if self.max_cost is None else self.max_cost - self.spent

    def check(self) -> tuple[str, str] | None:
        if self.stop_reason is None:
            left = self.remaining_cost()
            if left is not None and left <= 0:
                self.stop_reason = ("limit", f"not started: the batch --max-cost ${self.max_cost} was spent")
            elif self.deadline is not None and time.monotonic() >= self.deadline:
                self.stop_reason = ("timeout", "not started: the batch --timeout passed")
        return self.stop_reason


@dataclass
class _State:
    """The batch's running children and the signal that stopped it."""

    running: set[asyncio.subprocess.Process] = field(default_factory=set)
    signal: int | None = None


def exec_command(task: BatchTask, options: BatchOptions, budget: _Budget) -> list[str]:
    """The `mermaid exec` argv for one task: batch defaults, then the task's own flags, then what
    is left of the batch budget as the task's caps."""
    # -P: the task's directory (the repository's files) is not put first on sys.path, where a
    # `typing.py` or `json.py` of the repository would be imported in place of the standard
    # library's, by Mermaid itself, outside any sandbox
    argv = [sys.executable, "-P", "-m", "mermaid_cli", "exec", "--json", "--no-interactive"]
    model = task.model or options.model
    safety = task.safety or options.safety
    if model:
        argv += ["--model", model]
    if safety:
        argv += ["--safety", safety]
    for override in options.config_overrides:
        argv += ["-c", override]
    if options.allow_untrusted_tools:
        argv.append("--allow-untrusted-tools")
    for command in task.verify:
        argv += ["--verify", command]
    if task.max_turns:
        argv += ["--max-turns", str(task.max_turns)]
    if task.max_tokens:
        argv += ["--max-tokens", str(task.max_tokens)]
    caps = [c for c in (task.max_cost, budget.remaining_cost()) if c is not None]
    if caps:
        argv += ["--max-cost", f"{max(min(caps), 1e-9):.9f}"]
    timeout = task_timeout(task, budget)
    if timeout is not None:
        argv += ["--timeout", f"{timeout:.3f}"]
    return [*argv, "--", task.prompt]


def task_timeout(task: BatchTask, budget: _Budget) -> float | None:
    """The task's own --timeout, cut to what is left of the batch's."""
    left = None if budget.deadline is None else max(budget.deadline - time.monotonic(), 0.001)
    timeouts = [t for t in (task.timeout, left) if t is not None]
    return min(timeouts) if timeouts else None


def _not_started(task: BatchTask, status: str, reason: str) -> TaskResult:
    return TaskResult(task_id=task.id, status=status, exit_code=None, started=False, reason=reason)


async def _run_child(
    argv: list[str], cwd: Path, artifacts: Path, state: _State, timeout: float | None
) -> int:
    env = dict(os.environ)
    env.pop("MERMAID_HEARTBEAT_SECS", None)
    with open(artifacts / "events.jsonl", "wb") as events, open(artifacts / "stderr.log", "wb") as errors:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=events,
            stderr=errors,
            # its own session: a terminal's ^C reaches the batch, which forwards it once
            start_new_session=True,
        )
        state.running.add(proc)
        try:
            if state.signal is not None:
                proc.send_signal(state.signal)
            limit = None if timeout is None else timeout + KILL_GRACE_SECS
            try:
                return await asyncio.wait_for(proc.wait(), limit)
            except TimeoutError:
                proc.kill()
                return await proc.wait()
            except asyncio.CancelledError:  # the batch is ending without this task (a failure)
                await _stop_child(proc)
                raise
        finally:
            state.running.discard(proc)


async def _stop_child(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM, so that the run ends as an interrupted one (its `result`, its cleanups); SIGKILL
    if it is still there after `CANCEL_GRACE_SECS`."""
    if proc.returncode is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), CANCEL_GRACE_SECS)
    except TimeoutError:
        proc.kill()
        await proc.wait()


def _last_result(events_file: Path) -> dict[str, object] | None:
    try:
        lines = events_file.read_bytes().splitlines()
    except OSError:
        return None
    for raw in reversed(lines):
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("type") == "result":
            return event
    return None


def _from_result(task: BatchTask, code: int, event: dict[str, object] | None) -> TaskResult:
    if event is None:
        # the child died without framing its run (killed, or a crash before its first line):
        # the batch says so rather than inventing an outcome
        status = "interrupted" if code in (130, 143, -2, -15) else "internal_error"
        return TaskResult(
            task_id=task.id,
            status=status,
            exit_code=code if code >= 0 else 128 - code,
            reason=f"the task's run ended with exit {code} and wrote no result line",
        )
    status = str(event.get("status", "internal_error"))
    cost = event.get("cost_usd")
    files = event.get("files_changed")
    tokens = event.get("total_tokens")
    duration = event.get("duration_ms")
    return TaskResult(
        task_id=task.id,
        status=status,
        exit_code=code,
        duration_ms=duration if isinstance(duration, int) else 0,
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        total_tokens=tokens if isinstance(tokens, int) else 0,
        files_changed=[str(f) for f in files] if isinstance(files, list) else [],
        result=event,
    )


async def _run_task(
    task: BatchTask, options: BatchOptions, budget: _Budget, state: _State, parent: Path, in_git: bool
) -> TaskResult:
    started_ms = int((time.monotonic() - budget.started_at) * 1000)
    result = await _run_in_workspace(task, options, budget, state, parent, in_git)
    return result.model_copy(update={"started_ms": started_ms})


async def _run_in_workspace(
    task: BatchTask, options: BatchOptions, budget: _Budget, state: _State, parent: Path, in_git: bool
) -> TaskResult:
    artifacts = options.out_dir / "tasks" / task.id
    artifacts.mkdir(parents=True, exist_ok=True)
    workspace: Workspace | None = None
    try:
        workspace = await make_workspace(options.project, parent, task.id, in_git)
        cwd = workspace.root / task.path if task.path else workspace.root
        if not cwd.resolve().is_relative_to(workspace.root.resolve()) or not cwd.is_dir():
            return TaskResult(
                task_id=task.id,
                status="usage_error",
                exit_code=EXIT_CODES["usage_error"],
                reason=f"path {task.path!r} is not a directory of the workspace",
            )
        argv = exec_command(task, options, budget)
        code = await _run_child(argv, cwd, artifacts, state, task_timeout(task, budget))
        result = _from_result(task, code, _last_result(artifacts / "events.jsonl"))
        patch = await task_patch(workspace)
        _keep_sessions(workspace.root, artifacts)
        return result.model_copy(
            update={
                **TaskResult.encode_patch(patch),
                "workspace": workspace.kind,
                "artifacts": str(artifacts.relative_to(options.out_dir)),
            }
        )
    except (WorktreeError, OSError) as exc:
        return TaskResult(
            task_id=task.id,
            status="internal_error",
            exit_code=EXIT_CODES["internal_error"],
            reason=f"workspace: {exc}",
        )
    finally:
        if workspace is not None and not options.keep_workspaces:
            await remove_workspace(workspace)


def _keep_sessions(workspace_root: Path, artifacts: Path) -> None:
    """Copy the task's session files out before its workspace goes (`.mermaid/conversations`)."""
    source = workspace_root / ".mermaid" / "conversations"
    if source.is_dir():
        shutil.copytree(source, artifacts / "conversations", dirs_exist_ok=True)


async def run_batch(
    options: BatchOptions, on_result: Callable[[TaskResult, int, int], None]
) -> tuple[list[TaskResult], BatchSummary]:
    """Run the shard's tasks; `on_result(result, done, total)` is called as each one ends.
    Returns the results in task order and the summary."""
    started_at = time.monotonic()
    tasks = shard_tasks(options.tasks, options.shard) if options.shard else list(options.tasks.tasks)
    budget = _Budget(
        max_cost=options.max_cost,
        deadline=None if options.timeout is None else started_at + options.timeout,
        started_at=started_at,
    )
    state = _State()
    loop = asyncio.get_running_loop()

    def forward(signum: int) -> None:
        state.signal = signum
        for proc in list(state.running):
            proc.send_signal(signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, forward, signum)
    root = await git_root(options.project)
    project = root or options.project
    options = dataclasses.replace(options, project=project)
    parent = scratch_parent()
    results: dict[str, TaskResult] = {}
    gate = asyncio.Semaphore(max(1, options.jobs))
    failed = asyncio.Event()

    async def one(task: BatchTask) -> None:
        async with gate:
            stop = budget.check()
            if state.signal is not None:
                result = _not_started(task, "interrupted", "not started: the batch was interrupted")
            elif stop is not None:
                result = _not_started(task, *stop)
            elif failed.is_set():
                result = _not_started(
                    task, "skipped", "not started: an earlier task failed (no --keep-going)"
                )
            else:
                result = await _run_task(task, options, budget, state, parent, root is not None)
                budget.spent += result.cost_usd or 0.0
                if result.exit_code not in (0, None) and not options.keep_going:
                    failed.set()
            results[task.id] = result
            on_result(result, len(results), len(tasks))

    try:
        await gather_all(*(one(task) for task in tasks))  # none still running when `parent` goes
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        shutil.rmtree(parent, ignore_errors=True)
    ordered = [results[task.id] for task in tasks]
    if state.signal is not None:
        ordered = [
            r if r.started or r.status == "interrupted" else r.model_copy(update={"status": "interrupted"})
            for r in ordered
        ]
    summary = summarize(ordered, int((time.monotonic() - started_at) * 1000))
    if state.signal is not None:
        summary = summary.model_copy(update={"status": "interrupted", "exit_code": 128 + state.signal})
    return ordered, summary


def header_for(options: BatchOptions) -> BatchHeader:
    tasks = shard_tasks(options.tasks, options.shard) if options.shard else list(options.tasks.tasks)
    return BatchHeader(
        digest=options.tasks.digest,
        task_ids=options.tasks.ids,
        shard=str(options.shard) if options.shard else None,
        shard_task_ids=[task.id for task in tasks],
    )


def write_results(path: Path, header: BatchHeader, results: list[TaskResult], summary: BatchSummary) -> None:
    """All lines at once, through a temp file and a rename: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text("".join(line(m) + "\n" for m in (header, *results, summary)), encoding="utf-8")
    os.replace(tmp, path)
