"""One headless run, driven: assemble its parts (`run.assemble`), start the event stream, let the
loop work, then the operator's checks (--verify, --output-schema), the diff and the result.

The runner only drives parts; what they are and how they are built lives in `run.assemble`.
Guarantees (DESIGN.md §2, §3): once flags are parsed, `session_started` is the first event and
`result` the last on every path, and the process exit code equals `result.exit_code`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import signal
import sys
import traceback
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar, TypeVarTuple, Unpack

from mermaid_cli import __version__
from mermaid_cli.core import events as ev
from mermaid_cli.core import held_signals
from mermaid_cli.core.errors import Interrupted, MermaidError, RunTimeout
from mermaid_cli.run.options import ExecOptions, RunIO
from mermaid_cli.run.output import Output
from mermaid_cli.run.parts import close_draft
from mermaid_cli.run.setup import Draft

if TYPE_CHECKING:
    from mermaid_cli.agent.state import RunStats
    from mermaid_cli.run.assemble import RunParts
    from mermaid_cli.run.workspace_diff import WorkspaceSnapshot

__all__ = ["ExecOptions", "Run", "RunIO", "execute"]  # the options are re-exported for cli.main

#: how long the end of a run waits for the thread work it left behind
LEFT_BEHIND_GRACE_SECS = 2.0

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")


class _RunLoop(asyncio.SelectorEventLoop):
    """The run's event loop. At its end asyncio starts a thread just to join the worker threads
    (`asyncio.to_thread`, DNS) off the loop, then waits for each idle one to wake and exit: up to
    ~25 ms of the exit on a busy machine (issue 23). Here work still running is waited for in
    place, for `LEFT_BEHIND_GRACE_SECS` at most, and idle workers are only told to stop (the
    process exits next; an in-process caller's interpreter joins them at its own exit)."""

    def __init__(self) -> None:
        super().__init__()
        self._workers: ThreadPoolExecutor | None = None
        self._jobs: set[Future[Any]] = set()  # submitted, not finished (a cancelled await may be)

    def run_in_executor(
        self, executor: Executor | None, func: Callable[[Unpack[_Ts]], _T], *args: *_Ts
    ) -> asyncio.Future[_T]:
        if executor is not None:
            return super().run_in_executor(executor, func, *args)
        if self.is_closed():
            raise RuntimeError("Event loop is closed")
        if self._workers is None:
            self._workers = ThreadPoolExecutor(thread_name_prefix="asyncio")
        job = self._workers.submit(func, *args)
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)
        return asyncio.wrap_future(job, loop=self)

    async def shutdown_default_executor(self) -> None:
        await super().shutdown_default_executor()
        if self._workers is not None:
            # work the run left behind (its awaiter was cancelled) gets a moment to end, not
            # forever: a thread stuck in a system call (DNS, a stalled file system) must not
            # keep the process from exiting once `result` is written
            running = [job for job in list(self._jobs) if not job.done()]
            if running:
                concurrent.futures.wait(running, timeout=LEFT_BEHIND_GRACE_SECS)
            self._workers.shutdown(wait=False)
            self._workers = None


class Run:
    """Drives one run's parts and owns how it ends: signals, --timeout, cleanup, the result."""

    def __init__(self, opts: ExecOptions, io: RunIO) -> None:
        self.opts = opts
        self.io = io
        self.out = Output(opts.output_format, io, opts.quiet, plain=opts.plain or opts.no_interactive)
        self.draft = Draft(
            project_root=io.cwd,
            model_id=opts.model or "",
            safety_mode=opts.safety or "auto",
            t0=io.monotonic(),
        )
        self.parts: RunParts | None = None
        self.signum: int | None = None
        self.timed_out = False
        self.run_errors: list[str] = []  # checks that failed after the model finished (exit 1)
        self.structured_output: tuple[object] | None = None
        self.snapshot: WorkspaceSnapshot | None = None
        self._run_task: asyncio.Task[RunStats] | None = None
        self._main_task: asyncio.Task[object] | None = None

    def start_event(self) -> None:
        if self.out.started:
            return
        self.out.started = True
        d = self.draft
        self.out.emit(
            ev.SessionStarted(
                cli_version=__version__,
                model=d.model_id,
                session_id=d.session_id,
                cwd=str(d.project_root),
                safety_mode=d.safety_mode,
                tools=d.tools,
                limits=d.limits,
                policy_digest=d.policy_digest,
                sandbox=d.sandbox.describe() if d.sandbox is not None else None,
                plugins=d.plugins,
                skills=d.skills,
            )
        )

    def execute(self) -> int:
        try:
            with asyncio.Runner(loop_factory=_RunLoop) as runner:
                return runner.run(self._main())
        except KeyboardInterrupt:  # a signal before the loop could install its handlers
            return self._finish(Interrupted(self.signum or signal.SIGINT), None)
        finally:  # (the process exits next; an in-process caller gets its collector back)
            gc.unfreeze()
            gc.enable()

    async def _main(self) -> int:
        self._install_signal_handlers()
        self._main_task = asyncio.current_task()
        error: BaseException | None = None
        stats = None
        try:
            self._take_held_signal()
            parts = self.parts = await self._assemble_within_deadline()
            # What is alive now (modules, classes, settings) lives as long as the run: a full
            # collection walked all of it, 30-80 ms at a random moment of a run, the end included.
            gc.freeze()
            gc.enable()  # (a real `exec` process starts with the collector off: cli/entry.py)
            self.start_event()
            for pending in self.draft.pending_errors:
                self.out.emit(pending)
            stats = await self._drive_within_deadline(parts)
        except asyncio.CancelledError:  # a signal, or --timeout while assembling
            if self.timed_out and self.signum is None:
                error = self._timeout_error()
            else:
                error = Interrupted(self.signum or signal.SIGINT)
        except MermaidError as exc:
            error = exc
        except Exception as exc:  # a bug in Mermaid: traceback to stderr only, exit 70
            self.io.stderr.write(self.draft.redact(traceback.format_exc()))
            error = MermaidError(f"internal error: {type(exc).__name__}: {exc}")
        finally:
            await close_draft(self.draft)
        if error is not None and self.signum is not None and not isinstance(error, Interrupted):
            error = Interrupted(self.signum)  # DESIGN §3: of the ways a run fails, a signal comes first
        if stats is None and self.draft.agent is not None:
            stats = self.draft.agent.stats
        code = self._finish(error, stats)
        diff = sys.modules.get("mermaid_cli.run.workspace_diff")
        if diff is not None:  # a snapshot still comparing was left behind by the run's end
            diff.abandon_git()
        return code

    def _install_signal_handlers(self) -> None:
        if not self.io.install_signal_handlers:
            return
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(signum, self._on_signal, signum)
            except (NotImplementedError, RuntimeError):  # pragma: no cover - non-main thread
                pass

    def _take_held_signal(self) -> None:
        """A signal that came while the process started (`core/held_signals`): stop before any work."""
        if not self.io.install_signal_handlers:
            return
        signum = held_signals.take()
        if signum is not None:
            self._note_signal(signum)
            raise Interrupted(signum)

    async def _assemble_within_deadline(self) -> RunParts:
        """Assembly under `--timeout` too (MCP servers starting, a provider's credentials). It runs
        in this task (what it sets in context variables stays for the run); a watchdog cancels
        it at the deadline, known once assembly has loaded the settings (its first step)."""
        from mermaid_cli.run.assemble import assemble

        main = asyncio.current_task()
        assert main is not None
        watchdog = asyncio.ensure_future(self._cancel_at_deadline(main))
        try:
            return await assemble(self.opts, self.io, self.out, self.draft)
        finally:
            watchdog.cancel()

    async def _cancel_at_deadline(self, task: asyncio.Task[Any]) -> None:
        while (deadline := self.draft.deadline) is None:
            await asyncio.sleep(0.05)
        await asyncio.sleep(max(deadline - self.io.monotonic(), 0.0))
        self.timed_out = True
        task.cancel()

    async def _drive_within_deadline(self, parts: RunParts) -> RunStats:
        remaining = parts.deadline - self.io.monotonic()
        task = self._run_task = asyncio.ensure_future(self._drive(parts))
        done, _ = await asyncio.wait({task}, timeout=max(remaining, 0.001))
        if not done:
            self.timed_out = True
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self.signum is not None:
            raise Interrupted(self.signum)
        if self.timed_out:
            raise self._timeout_error()
        return task.result()

    def _timeout_error(self) -> RunTimeout:
        settings = self.draft.settings
        assert settings is not None  # a deadline passed: the settings that set it are loaded
        return RunTimeout(f"the run exceeded --timeout {settings.run.timeout:g} seconds")

    async def _drive(self, parts: RunParts) -> RunStats:
        """The model's work, then the operator's checks: --verify rounds, then --output-schema."""
        from mermaid_cli.run.finish import prepare
        from mermaid_cli.run.verify import verify_rounds

        prepared = asyncio.ensure_future(asyncio.to_thread(prepare))  # the end's own set-up, now
        # The snapshot runs while the first request is in flight; tools wait for it before running.
        snapshot = asyncio.ensure_future(self._snapshot(parts))
        parts.agent.tools_ready = snapshot
        from mermaid_cli.run.workspace_diff import keeping, track_tool_batches

        # earlier contents of what tools change, and a refresh after each tool batch (issue 23)
        parts.ctx.checkpoint = keeping(parts.ctx.checkpoint, lambda: self.snapshot)
        parts.agent.on_message = track_tool_batches(parts.agent.on_message, lambda: self.snapshot)
        stats = await parts.agent.run(parts.prompt)
        await snapshot
        await prepared
        stats = await verify_rounds(parts, self.out, stats, self.run_errors)
        if parts.schema is not None:
            if stats.finished and stats.response.strip():
                await self._structured(parts, stats)
            else:
                self.run_errors.append("output_schema: skipped (run ended without a final answer)")
        if self.snapshot is not None and not self._stale(stats):
            # the comparison the result reports, done before the cleanups rather than after
            self.snapshot.settle(diff_wanted=bool(self.opts.diff_out))
        return stats

    def _stale(self, stats: RunStats) -> bool:
        """Whether the last comparison may miss changes made after it: a cancelled call, a
        background process (stopped by the cleanups) or --verify's commands."""
        settings = self.draft.settings
        return (
            not stats.finished
            or bool(self.parts is not None and self.parts.ctx.background)
            or bool(settings is not None and settings.verify.commands)
        )

    async def _snapshot(self, parts: RunParts) -> None:
        from mermaid_cli.run.workspace_diff import take_snapshot

        try:
            own = self._own_files(parts)
            self.snapshot = await asyncio.to_thread(take_snapshot, parts.project_root, own)
        except Exception as exc:  # noqa: BLE001 - a diff is a report, never a reason to fail the run
            self.out.note(f"cannot snapshot the project for the diff: {exc}")
            self.snapshot = None

    def _own_files(self, parts: RunParts) -> frozenset[str]:
        """Project-relative paths of the files Mermaid itself writes during this run."""
        from mermaid_cli.run.workspace_diff import own_files

        opts = self.opts
        names = (opts.record, opts.diff_out, opts.output_last_message)
        return own_files(parts.project_root, self.io.cwd, names, self.io.stdout)

    async def _structured(self, parts: RunParts, stats: RunStats) -> None:
        from mermaid_cli.run.structured import format_prompt, shape

        assert parts.schema is not None  # only called with --output-schema
        turn = await parts.agent.extra_turn(format_prompt(parts.schema), response_schema=parts.schema)
        text, value, error = shape(turn.message.text, parts.schema)
        stats.response = text
        if error is None:
            self.structured_output = (value,)
        else:
            self.run_errors.append(error)

    def _note_signal(self, signum: int) -> None:
        """The first signal is the one the run reports."""
        if self.signum is None:
            self.signum = signum
            self.out.note(f"received {signal.Signals(signum).name}: stopping the run")

    def _on_signal(self, signum: int) -> None:
        self._note_signal(signum)
        # Before the model's work starts (config, MCP servers), the preparation itself is cancelled;
        # either way the run ends through `_main`, which closes everything and prints `result`.
        task = self._run_task if self._run_task is not None else self._main_task
        if task is not None:
            task.cancel()

    def _finish(self, error: BaseException | None, stats: RunStats | None) -> int:
        gc.disable()  # the model's work is over: no collection from here to the exit
        from mermaid_cli.agent.state import RunStats
        from mermaid_cli.run.finish import Outcome, finish

        tree = self.draft.tree
        agents = tree.breakdown() if tree is not None and tree.records else None
        outcome = Outcome(
            error, stats or RunStats(), self.run_errors, self.structured_output, self.snapshot, agents
        )
        outcome.recompare = self._stale(outcome.stats)
        return finish(
            outcome,
            opts=self.opts,
            io=self.io,
            out=self.out,
            settings=self.draft.settings,
            project_root=self.draft.project_root,
            session_id=self.draft.session_id,
            duration_ms=int((self.io.monotonic() - self.draft.t0) * 1000),
            redact=self.draft.redact,
            start_event=self.start_event,
        )


def execute(opts: ExecOptions, io: RunIO) -> int:
    return Run(opts, io).execute()
