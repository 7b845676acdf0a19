"""One headless run, end to end: settings, prompt, session, provider, tools, the loop, the result.

This is the CLI layer's orchestration (it knows every concrete piece); `cli.py` only parses flags.
Guarantees (DESIGN.md §2, §3): once flags are parsed, `session_started` is the first event and
`result` the last on every path, and the process exit code equals `result.exit_code`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from mermaid_cli import __version__
from mermaid_cli.core import events as ev
from mermaid_cli.core.errors import (
    EXIT_CODES,
    Interrupted,
    MermaidError,
    RunTimeout,
    UsageError,
)
from mermaid_cli.core.text import cap_text
from mermaid_cli.run.output import Output

if TYPE_CHECKING:  # loaded inside _prepare, off the import path of `mermaid --help`
    from mermaid_cli.config.loader import Settings
    from mermaid_cli.core.types import Message
    from mermaid_cli.security.sandbox.run import RunSandbox
    from mermaid_cli.store.sessions import SessionWriter
    from mermaid_cli.tools.base import ToolContext


@dataclass
class ExecOptions:
    """Everything `mermaid exec` was given, before any of it is resolved."""

    prompt: str | None = None
    output_format: str = "text"
    model: str | None = None
    max_turns: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None
    timeout: float | None = None
    resume: str | None = None
    continue_: bool = False
    record: str | None = None
    config_overrides: list[str] = field(default_factory=list)
    profile: str | None = None
    path: str | None = None
    system_prompt: str | None = None
    system_prompt_file: str | None = None
    append_system_prompt: str | None = None
    append_system_prompt_file: str | None = None
    output_last_message: str | None = None
    safety: str | None = None
    policy: str | None = None
    allow_untrusted_tools: bool = False
    no_interactive: bool = False
    reasoning: str | None = None
    quiet: bool = False
    masks: list[str] = field(default_factory=list)
    mcp_prompt: str | None = None
    no_network: bool = False
    confine_fs: bool = False
    sandbox: str | None = None  # --sandbox [on|off|best-effort] -> [sandbox] mode
    output_schema: str | None = None
    verify: list[str] = field(default_factory=list)
    verify_attempts: int | None = None
    diff_out: str | None = None
    prompt_args: list[str] = field(default_factory=list)
    ephemeral: bool = False  # --ephemeral: write no session file


@dataclass
class RunIO:
    """The process's streams and clocks, injectable so tests pin ids and durations."""

    stdin: TextIO | None
    stdin_is_tty: bool
    stdout: BinaryIO
    stderr: TextIO
    stderr_is_tty: bool = False
    env: dict[str, str] | os._Environ[str] = field(default_factory=lambda: os.environ)
    cwd: Path = field(default_factory=Path.cwd)
    clock: Callable[[], datetime] = field(default_factory=lambda: lambda: datetime.now(UTC))
    monotonic: Callable[[], float] = time.monotonic
    install_signal_handlers: bool = True


def read_piped(io: RunIO) -> str:
    """Piped stdin, trimmed; empty when stdin is a TTY or absent (never blocks on a terminal).

    Invalid UTF-8 is decoded with U+FFFD in place of each bad sequence and a warning on stderr
    (docs/ci.md): a log piped in with one stray byte should still be reviewed, and no lone
    surrogate may reach the provider request."""
    if io.stdin is None or io.stdin_is_tty:
        return ""
    try:
        buffer = getattr(io.stdin, "buffer", None)
        if buffer is not None:
            raw = buffer.read()
        else:  # a text stream (tests): undo a surrogateescape decoding, if any
            text = io.stdin.read()
            try:
                raw = text.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:
                raw = text.encode("utf-8", "surrogatepass")
    except OSError as exc:
        raise UsageError(f"cannot read stdin: {exc}") from None
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", "replace")
        bad = text.count("\ufffd") - raw.decode("utf-8", "ignore").count("\ufffd")
        try:
            io.stderr.write(
                f"mermaid: warning: stdin is not valid UTF-8 (first bad byte at offset {exc.start}); "
                f"{bad} invalid sequence(s) replaced with U+FFFD\n"
            )
        except (OSError, ValueError):
            pass
        return text.strip()


def resolve_prompt(prompt: str | None, io: RunIO) -> str:
    """The prompt argument, piped stdin, or both (stdin appended as a fenced block)."""
    piped = read_piped(io)
    if prompt is None or prompt == "-":
        if not piped:
            raise UsageError("no prompt given: pass a prompt or pipe text on stdin")
        return piped
    if not prompt.strip():
        raise UsageError("prompt must not be empty")
    if piped:
        return f"{prompt}\n\n```\n{piped}\n```"
    return prompt


def _check_writable(flag: str, target: Path, *, make_parents: bool) -> None:
    """Exit 2 before the model is called when an output file could not be written at the end:
    a create test in the directory that will hold it (permission bits lie to root, a read-only
    mount or a file where a directory should be does not)."""
    if "\x00" in str(target):
        raise UsageError(f"{flag}: the path contains a NUL byte")
    try:
        _probe_writable(flag, target, make_parents=make_parents)
    except OSError as exc:
        raise UsageError(f"{flag} {target}: cannot write there ({exc.strerror or exc})") from None


def _probe_writable(flag: str, target: Path, *, make_parents: bool) -> None:
    import tempfile

    if target.is_dir():
        raise UsageError(f"{flag} {target}: is a directory")
    directory = target.parent
    if make_parents:
        while not directory.exists() and directory != directory.parent:
            directory = directory.parent  # created at the end; the first existing one must take it
    if not directory.is_dir():
        raise UsageError(f"{flag} {target}: {directory} is not a directory")
    fd, probe = tempfile.mkstemp(prefix=".mermaid-write-test-", dir=directory)
    os.close(fd)
    os.unlink(probe)
    if target.exists() and not os.access(target, os.W_OK):
        raise UsageError(f"{flag} {target}: the file is not writable")


class Run:
    def __init__(self, opts: ExecOptions, io: RunIO) -> None:
        self.opts = opts
        self.io = io
        fmt = opts.output_format
        self.out = Output(fmt, io, opts.quiet)
        self.t0 = io.monotonic()
        self.session_id = ""
        self.model_id = opts.model or ""
        self.project_root = io.cwd
        self.safety_mode = opts.safety or "auto"
        self.tools: list[str] = []
        self.limits: dict[str, Any] = {}
        self.policy_digest: str | None = None
        self.signum: int | None = None
        self.timed_out = False
        self.redact: Callable[[str], str] = lambda s: s
        self.agent: Any = None
        self.cleanups: list[Callable[[], Any]] = []
        self.pending_errors: list[ev.Error] = []
        self.run_sandbox: RunSandbox | None = None
        self.run_errors: list[str] = []  # checks that failed after the model finished (exit 1)
        self.structured_output: tuple[Any] | None = None
        self.snapshot: Any = None

    # -- helpers ------------------------------------------------------------------------------
    def start_event(self) -> None:
        if self.out.started:
            return
        self.out.started = True
        self.out.emit(
            ev.SessionStarted(
                cli_version=__version__,
                model=self.model_id,
                session_id=self.session_id,
                cwd=str(self.project_root),
                safety_mode=self.safety_mode,
                tools=self.tools,
                limits=self.limits,
                policy_digest=self.policy_digest,
                sandbox=self.run_sandbox.describe() if self.run_sandbox is not None else None,
            )
        )

    def execute(self) -> int:
        try:
            return asyncio.run(self._main())
        except KeyboardInterrupt:  # a signal before the loop could install its handlers
            return self._finish(Interrupted(self.signum or signal.SIGINT), None)

    async def _main(self) -> int:
        loop = asyncio.get_running_loop()
        if self.io.install_signal_handlers:
            for signum in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.add_signal_handler(signum, self._on_signal, signum)
                except (NotImplementedError, RuntimeError):  # pragma: no cover - non-main thread
                    pass
        self._run_task: asyncio.Task[Any] | None = None
        self._main_task = asyncio.current_task()
        error: BaseException | None = None
        stats = None
        try:
            await self._prepare()
            self.start_event()
            for pending in self.pending_errors:
                self.out.emit(pending)
            remaining = self.deadline - self.io.monotonic()
            self._run_task = asyncio.ensure_future(self._drive())
            done, _ = await asyncio.wait({self._run_task}, timeout=max(remaining, 0.001))
            if not done:
                self.timed_out = True
                self._run_task.cancel()
                await asyncio.gather(self._run_task, return_exceptions=True)
            if self.signum is not None:
                raise Interrupted(self.signum)
            if self.timed_out:
                raise RunTimeout(f"the run exceeded --timeout {self.timeout_secs:g} seconds")
            stats = self._run_task.result()
        except asyncio.CancelledError:
            error = Interrupted(self.signum or signal.SIGINT)
        except MermaidError as exc:
            error = exc
        except Exception as exc:  # a bug in Mermaid: traceback to stderr only, exit 70
            self.io.stderr.write(self.redact(traceback.format_exc()))
            error = MermaidError(f"internal error: {type(exc).__name__}: {exc}")
        finally:
            await self._close()
        if stats is None and self.agent is not None:
            stats = self.agent.stats
        return self._finish(error, stats)

    async def _drive(self) -> Any:
        """The model's work, then the operator's checks: --verify rounds, then --output-schema."""
        # The snapshot runs while the first request is in flight; tools wait for it before running.
        snapshot = asyncio.ensure_future(self._snapshot())
        self.agent.tools_ready = snapshot
        from mermaid_cli.run.workspace_diff import keeping, track_tool_batches

        self.ctx.checkpoint = keeping(self.ctx.checkpoint, lambda: self.snapshot)
        self.agent.on_message = track_tool_batches(self.agent.on_message, lambda: self.snapshot)
        stats = await self.agent.run(self.prompt)
        await snapshot
        commands = self.settings.verify.commands
        if commands and stats.finished:
            for attempt in range(1, self.settings.verify.attempts + 2):
                failures = await self._verify(commands, attempt)
                if not failures:
                    break
                if attempt > self.settings.verify.attempts:
                    for command, code in failures:
                        self.run_errors.append(
                            f"verify: `{command}` still fails (exit {code}) after {attempt} attempts"
                        )
                    break
                stats = await self.agent.run(self._verify_feedback(failures))
        if self.schema is not None:
            if stats.finished and stats.response.strip():
                await self._structured(stats)
            else:
                self.run_errors.append("output_schema: skipped (run ended without a final answer)")
        return stats

    async def _snapshot(self) -> None:
        from mermaid_cli.run.workspace_diff import WorkspaceSnapshot

        try:
            own = self._own_files()
            self.snapshot = await asyncio.to_thread(WorkspaceSnapshot.take, self.project_root, own)
        except Exception as exc:  # noqa: BLE001 - a diff is a report, never a reason to fail the run
            self.out.note(f"cannot snapshot the project for the diff: {exc}")
            self.snapshot = None

    def _own_files(self) -> frozenset[str]:
        """Project-relative paths of the files Mermaid itself writes during this run."""
        from mermaid_cli.run.workspace_diff import stream_target

        targets = [self.io.cwd / name for name in (self.opts.record, self.opts.diff_out, self.opts.output_last_message) if name]
        stdout_file = stream_target(self.io.stdout)
        if stdout_file is not None:
            targets.append(stdout_file)
        own = set()
        for target in targets:
            try:
                own.add(target.resolve().relative_to(self.project_root).as_posix())
            except (ValueError, OSError):
                pass  # outside the project: never in its diff anyway
        return frozenset(own)

    async def _verify(self, commands: list[str], attempt: int) -> list[tuple[str, int]]:
        from mermaid_cli.tools.shell import run_command

        failures = []
        self.verify_outputs: dict[str, str] = {}
        for command in commands:
            self.out.info(f"verify (attempt {attempt}): {command}")
            outcome = await run_command(
                command,
                cwd=self.project_root,
                env=self.ctx.child_env or {},
                timeout=self.settings.verify.timeout,
                on_line=self.out.progress_line,
                sandbox=self.ctx.sandbox,  # the same confinement as the mode gives the model
            )
            code = outcome.exit_code if outcome.exit_code is not None else 1
            output = self.redact(outcome.output)
            self.out.emit(
                ev.VerifyFinished(
                    command=command, exit_code=code, attempt=attempt, output=_tail(output, 8192)
                )
            )
            if code != 0:
                failures.append((command, code))
                self.verify_outputs[command] = output
        return failures

    def _verify_feedback(self, failures: list[tuple[str, int]]) -> str:
        parts = [
            "The operator's verification failed after your last answer. Fix the problem, then answer again."
        ]
        for command, code in failures:
            output = _tail(self.verify_outputs.get(command, ""), 12_000)
            parts.append(f"`{command}` exited with code {code}:\n```\n{output}\n```")
        return "\n\n".join(parts)

    async def _structured(self, stats: Any) -> None:
        from mermaid_cli.run.structured import FORMAT_PROMPT, shape

        assert self.schema is not None  # only called with --output-schema
        turn = await self.agent.extra_turn(FORMAT_PROMPT, response_schema=self.schema)
        text, value, error = shape(turn.message.text, self.schema)
        stats.response = text
        if error is None:
            self.structured_output = (value,)
        else:
            self.run_errors.append(error)

    def _on_signal(self, signum: int) -> None:
        if self.signum is None:
            self.signum = signum
            self.out.note(f"received {signal.Signals(signum).name}: stopping the run")
        # Before the model's work starts (config, MCP servers), the preparation itself is cancelled;
        # either way the run ends through `_main`, which closes everything and prints `result`.
        task = self._run_task if self._run_task is not None else self._main_task
        if task is not None:
            task.cancel()

    async def _close(self) -> None:
        if self.agent is not None:
            await self.agent.aclose()
            try:
                await self.agent.provider.aclose()
            except Exception:  # noqa: BLE001
                pass
        for cleanup in reversed(self.cleanups):
            try:
                outcome = cleanup()
                if asyncio.iscoroutine(outcome):
                    await outcome
            except Exception:  # noqa: BLE001
                pass
        if self.run_sandbox is not None:  # after the cleanups: background processes are gone
            self.run_sandbox.close()

    # -- preparing the run --------------------------------------------------------------------
    async def _prepare(self) -> None:
        from mermaid_cli.agent.loop import Agent
        from mermaid_cli.agent.state import CompactionPolicy, Limits

        opts, io = self.opts, self.io
        self._check_options()
        settings = self._load_settings()
        history, history_ids, seq = self._load_history()

        if opts.mcp_prompt is None:
            self.prompt = resolve_prompt(opts.prompt, io)

        provider, price = self._provider(settings)
        if not opts.quiet:
            from mermaid_cli.run.heartbeat import HeartbeatProvider, interval_from

            provider = HeartbeatProvider(provider, self.out.note, interval=interval_from(io.env))
        self.model_id = provider.model_id
        if settings.run.max_cost is not None and price is None:
            raise UsageError(
                f"--max-cost needs a price for {self.model_id}, and none is known; set [pricing] for it"
            )

        # A person can be asked only when both ends are a terminal (never in CI).
        self.interactive = bool(
            io.stdin_is_tty and io.stderr_is_tty and not opts.no_interactive and io.install_signal_handlers
        )
        registry = self._registry(settings)
        if settings.mcp_servers:
            await self._start_mcp(settings, registry)
        if opts.mcp_prompt is not None:
            self.prompt = await self._mcp_prompt()
        self.tools = registry.names()
        self.system_prompt = self._system_prompt(settings)

        writer = self._open_session(seq, resumed=bool(history))

        recorder = None
        if opts.record:
            from mermaid_cli.store.recordings import Recorder

            recorded_model = getattr(provider, "recorded_model", None) or self.model_id
            recorder = Recorder(
                io.cwd / opts.record, recorded_model, io.clock().isoformat(), redact=self.redact
            )
            self.cleanups.append(recorder.close)

        self._start_sandbox(settings)
        ctx = self._tool_context(settings, writer)
        self.ctx = ctx
        comp = settings.compaction
        ctx.interactive = self.interactive
        gate = self._gate(settings, provider)
        ctx.external_access = gate.external_access
        self.agent = Agent(
            provider=provider,
            registry=registry,
            ctx=ctx,
            emit=self.out.emit,
            system_prompt=self.system_prompt,
            history=history,
            limits=Limits(settings.run.max_turns, settings.run.max_tokens, settings.run.max_cost),
            price=price,
            on_turn=recorder.record if recorder else None,
            on_message=writer.append_message,
            on_compaction=writer.append_compaction,
            history_ids=history_ids,
            compaction=CompactionPolicy(
                auto_enabled=comp.auto_enabled,
                threshold_percent=comp.auto_threshold_percent,
                tail_turns=comp.tail_turns,
                max_recoveries=comp.max_truncation_recoveries,
                window=comp.context_window or self.model_window,
            ),
            note=self.out.note,
            redact=self.redact,
            reasoning=settings.reasoning,
            max_output_tokens=settings.run.max_output_tokens,
            monotonic=io.monotonic,
            gate=gate,
        )

    def _check_options(self) -> None:
        """Flag combinations and output paths, checked before anything is loaded (exit 2)."""
        opts, io = self.opts, self.io
        if opts.path is not None:
            root = (io.cwd / opts.path).resolve()
            if not root.is_dir():
                raise UsageError(f"--path {opts.path}: not a directory")
            self.project_root = root
        else:
            self.project_root = io.cwd.resolve()
        if opts.ephemeral and (opts.resume or opts.continue_):
            raise UsageError("--ephemeral cannot be used with --resume or --continue (nothing is saved to resume)")
        if opts.resume and opts.continue_:
            raise UsageError("--resume and --continue cannot be used together")
        if opts.system_prompt is not None and opts.system_prompt_file is not None:
            raise UsageError("--system-prompt and --system-prompt-file cannot be used together")
        if opts.append_system_prompt is not None and opts.append_system_prompt_file is not None:
            raise UsageError("--append-system-prompt and --append-system-prompt-file cannot be used together")
        for flag, name, make_parents in (
            ("--record", opts.record, False),
            ("--diff-out", opts.diff_out, False),
            ("--output-last-message", opts.output_last_message, True),
        ):
            if name:
                _check_writable(flag, io.cwd / name, make_parents=make_parents)


    def _load_settings(self) -> Settings:
        """Every config layer with the flags on top; then what follows from the settings: the
        digest, the limits, the redactor and the output schema."""
        from mermaid_cli.config import loader as cfg

        opts, io = self.opts, self.io
        flags = {
            "model": opts.model,
            "reasoning": opts.reasoning,
            "run.max_turns": opts.max_turns,
            "run.max_tokens": opts.max_tokens,
            "run.max_cost": opts.max_cost,
            "run.timeout": opts.timeout,
            "safety.mode": opts.safety,
            "safety.allow_untrusted_headless_tools": True if opts.allow_untrusted_tools else None,
            "safety.network": "deny" if opts.no_network else None,
            "safety.filesystem": "project" if opts.confine_fs else None,
            "sandbox.mode": opts.sandbox,
            "verify.commands": list(opts.verify) or None,
            "verify.attempts": opts.verify_attempts,
        }
        policy_layer = None
        if opts.policy is not None:
            from mermaid_cli.policy import find_preset, load_preset

            policy_layer = (f"--policy {find_preset(opts.policy)}", load_preset(opts.policy))
        loaded = cfg.load_settings(
            project_root=self.project_root,
            env=io.env,
            profile=opts.profile,
            policy=policy_layer,
            overrides=list(opts.config_overrides),
            flags=flags,
        )
        for warning in loaded.warnings:
            self.out.note(warning)
        settings = self.settings = loaded.settings
        if os.environ.pop("_MERMAID_SET_PYDANTIC_PLUGINS", None):
            os.environ.pop("PYDANTIC_DISABLE_PLUGINS", None)  # pydantic has read it by now
        self.safety_mode = settings.safety.mode
        from mermaid_cli.config.sections.safety import policy_digest

        self.policy_digest = policy_digest(settings.safety)
        self.model_id = settings.model or self.model_id
        self.timeout_secs = settings.run.timeout
        self.deadline = self.t0 + settings.run.timeout
        self.limits = {
            "max_turns": settings.run.max_turns,
            "max_tokens": settings.run.max_tokens,
            "max_cost": settings.run.max_cost,
            "timeout": settings.run.timeout,
        }
        self.redact = self._build_redactor()
        self.out.redact = self.redact
        self.out.secrets = lambda: self.redactor.secrets  # the stream hold-back's window
        self.out.install_logging(debug=io.env.get("MERMAID_DEBUG") == "1")
        self.schema = None
        if opts.output_schema is not None:
            from mermaid_cli.run.structured import load_schema

            self.schema = load_schema(io.cwd / opts.output_schema)

        return settings

    def _load_history(self) -> tuple[list[Message], list[int], int]:
        """Resume, continue or new. A missing session is exit 2, never a silent fresh start."""
        from mermaid_cli.store.sessions import latest_session_id, load_session

        opts = self.opts
        history = []
        history_ids: list[int] = []
        seq = 0
        self.resumed_next_index = 0
        self.resumed_compactions = 0
        if opts.resume or opts.continue_:
            sid = opts.resume
            if opts.continue_:
                sid = latest_session_id(self.project_root)
                if sid is None:
                    raise UsageError(f"--continue: no saved session found for {self.project_root}")
            self.session_id = sid or ""
            data = load_session(self.project_root, self.session_id)
            for bad in data.bad_lines:
                self.out.note(f"session file: skipped unreadable line {bad}")
            history = data.messages
            history_ids = data.context_ids
            seq = data.last_seq
            self.resumed_next_index = max(data.all_messages, default=-1) + 1
            self.resumed_compactions = data.compactions
            self.resumed_state = data.state
        else:
            self.resumed_state = {}

        return history, history_ids, seq

    def _open_session(self, seq: int, *, resumed: bool) -> SessionWriter:
        """The session file: appended to when resuming, created otherwise (under a private temp dir
        with --ephemeral)."""
        from mermaid_cli.store.sessions import SessionWriter, create_session

        opts, io = self.opts, self.io
        continuing = bool(self.session_id)
        try:
            if continuing:
                path = self.project_root / ".mermaid" / "conversations" / f"{self.session_id}.jsonl"
                writer = SessionWriter(path, seq=seq, redact=self.redact, clock=io.clock)
                writer.message_count = self.resumed_next_index
                writer.compactions = self.resumed_compactions
            else:
                # --ephemeral: the session file lives in a private temp dir that goes with the run
                # (context_archive still reads it); nothing is left in the project
                store_root = self.project_root
                if opts.ephemeral:
                    import shutil
                    import tempfile

                    store_root = Path(tempfile.mkdtemp(prefix="mermaid-ephemeral-"))
                    self.cleanups.append(lambda: shutil.rmtree(store_root, ignore_errors=True))
                self.session_id, writer = create_session(store_root, io.clock(), redact=self.redact, clock=io.clock)
        except OSError as exc:
            where = self.project_root / ".mermaid" / "conversations"
            raise UsageError(f"cannot write the session under {where}: {exc.strerror or exc}") from None
        if not continuing:
            writer.append(
                "started",
                session_id=self.session_id,
                model=self.model_id,
                cwd=str(self.project_root),
                cli_version=__version__,
            )
        writer.append("run", model=self.model_id, resumed=resumed, safety_mode=self.safety_mode)
        self.out.session = writer
        self.cleanups.append(writer.close)

        return writer

    def _start_sandbox(self, settings: Settings) -> None:
        from mermaid_cli.security.sandbox.run import RunSandbox

        # DESIGN §4.1: built once, before the first model call; exit 2 here when it cannot be had.
        try:
            self.run_sandbox = RunSandbox.start(
                enforce=settings.sandbox.mode,
                safety_mode=settings.safety.mode,
                network_denied=settings.safety.network == "deny",
                confine_fs=settings.safety.filesystem == "project",
                project_root=self.project_root,
                writable_roots=settings.sandbox.writable_roots,
                readable_roots=settings.sandbox.readable_roots,
                env=self.io.env,
            )
        except ValueError as exc:
            raise UsageError(f"[sandbox]: {exc}") from None
        for warning in self.run_sandbox.warnings:
            self.out.note(warning)
        if self.run_sandbox.degraded:
            self.pending_errors.append(ev.Error(message=self.run_sandbox.warnings[-1], code="sandbox_degraded"))
        settings.safety.mark_sandboxed(self.run_sandbox.confining)

    def _tool_context(self, settings: Settings, writer: SessionWriter) -> ToolContext:
        from mermaid_cli.config import loader as cfg
        from mermaid_cli.security.childenv import scrubbed_env
        from mermaid_cli.store.sessions import archive_of
        from mermaid_cli.tools.base import ToolContext

        io, sandbox = self.io, self.run_sandbox
        assert sandbox is not None  # _start_sandbox ran
        ctx = ToolContext(
            project_root=self.project_root,
            session_id=self.session_id,
            settings=settings,
            progress=self.out.progress_line,
            emit=self._tool_event,
            interactive=self.interactive,
            child_env=sandbox.child_env(scrubbed_env(io.env, settings.exec.env_allow)),
            sandbox=sandbox.prepared,
        )
        ctx.user_config_dir = cfg.user_config_dir(io.env)
        ctx.safety_mode = settings.safety.mode
        ctx.redact = self.redact  # memory refuses anything the run would redact
        ctx.archive = lambda: archive_of(writer.path)
        if "tasks" in self.resumed_state:
            from mermaid_cli.tools.tasks import TaskStore

            ctx.tasks = TaskStore.from_dict(self.resumed_state["tasks"])
        if getattr(settings.safety, "checkpoint_on_mutation", True):
            from mermaid_cli.store.checkpoints import CheckpointStore

            ctx.checkpoint = CheckpointStore(cfg.data_dir(io.env), self.project_root, self.session_id)
        return ctx

    def _build_redactor(self) -> Callable[[str], str]:
        from mermaid_cli.security.redact import Redactor

        self.redactor = Redactor.from_environment(self.io.env, extra=self.opts.masks)
        return self._redact

    def add_secret(self, value: str) -> None:
        """A secret learned during the run (a key from the keyring): redacted from then on."""
        if value:
            self.redactor = self.redactor.with_secrets([value])

    def _redact(self, text: str) -> str:
        return self.redactor.redact(text)

    def _system_prompt(self, settings: Settings) -> str:
        from mermaid_cli.run.assemble import system_prompt

        opts = self.opts
        return system_prompt(
            settings,
            self.io.env,
            tools=self.tools,
            project_root=self.project_root,
            interactive=self.interactive,
            replace=opts.system_prompt,
            replace_file=opts.system_prompt_file,
            append=opts.append_system_prompt,
            append_file=opts.append_system_prompt_file,
        )

    def _gate(self, settings: Settings, provider: Any) -> Any:
        from mermaid_cli.run.assemble import RecordingReviewer, policy_gate

        reviewer = provider
        if settings.safety.auto_classifier_model:
            from mermaid_cli.providers.resolve import create_provider

            reviewer = create_provider(settings.safety.auto_classifier_model, settings, self.io.env)
            self.cleanups.append(reviewer.aclose)
        self.gate = policy_gate(
            settings,
            project_root=self.project_root,
            reviewer=RecordingReviewer(reviewer, lambda: self.agent.on_turn if self.agent else None),
            emit=self.out.emit,
            note=self.out.note,
            redact=self.redact,
            interactive=self.interactive,
            user_request=lambda: self.prompt,
            untrusted_content=lambda: bool(self.agent and self.agent.stats.untrusted_content),
            on_usage=lambda usage: self.agent.account(usage) if self.agent else None,
        )
        return self.gate

    async def _start_mcp(self, settings: Settings, registry: Any) -> None:
        from mermaid_cli.run.assemble import start_mcp

        self.mcp, errors = await start_mcp(settings, registry, note=self.out.note)
        self.cleanups.append(self.mcp.aclose)
        self.pending_errors.extend(errors)

    async def _mcp_prompt(self) -> str:
        from mermaid_cli.integrations.mcp.prompts import fetch_prompt

        if getattr(self, "mcp", None) is None:
            raise UsageError("--mcp-prompt: no MCP servers are configured")
        text = await fetch_prompt(self.mcp, self.opts.mcp_prompt or "", list(self.opts.prompt_args))
        piped = read_piped(self.io)
        return f"{text}\n\n```\n{piped}\n```" if piped else text

    def _tool_event(self, event: Any) -> None:
        """Tools emit protocol events (or their dict form); task changes are also saved for --resume."""
        if isinstance(event, dict):
            event = ev.parse_event(json.dumps(event))
        if isinstance(event, ev.TasksUpdated) and self.out.session is not None:
            store = self.ctx.tasks
            if store is not None:
                self.out.session.append("state", tasks=store.to_dict())
        self.out.emit(event)

    def _provider(self, settings: Settings) -> tuple[Any, Callable[[Any], float | None] | None]:
        from mermaid_cli.providers.resolve import resolve_model

        resolved = resolve_model(
            None,
            settings,
            self.io.env,
            cwd=self.io.cwd,
            deadline=lambda: time.monotonic() + self.deadline - self.io.monotonic(),
        )
        self.model_id = resolved.model_id
        self.model_window = resolved.context_window
        for secret in resolved.secrets:
            self.add_secret(secret)
        for warning in resolved.warnings:
            self.out.note(warning)
        return resolved.provider, (resolved.cost if resolved.price is not None else None)

    def _registry(self, settings: Settings) -> Any:
        from mermaid_cli.run.assemble import cached_registry

        return cached_registry(settings, self.io.env, interactive=self.interactive)

    # -- the result ---------------------------------------------------------------------------
    def _finish(self, error: BaseException | None, stats: Any) -> int:
        from mermaid_cli.agent.state import RunStats
        from mermaid_cli.core.errors import Blocked

        stats = stats or RunStats()
        if error is None:
            if stats.blocked:
                status = "blocked"
            elif self.run_errors:
                status = "failed"
            elif (
                getattr(self, "settings", None) is not None
                and self.settings.exec.fail_on_tool_error
                and stats.tool_errors
            ):
                status = "failed"
            else:
                status = "success"
            exit_code = EXIT_CODES[status]
        else:
            status = getattr(error, "status", "internal_error")
            exit_code = getattr(error, "exit_code", 70)
            # a block that happened before a provider error still loses to it (DESIGN.md §3 order)
            if isinstance(error, Blocked):
                status, exit_code = "blocked", 3
        errors = list(stats.errors) + self.run_errors
        for message in self.run_errors:  # the operator's checks that failed; stdout stays the answer
            self.out.note(f"error: {self.redact(message)}")
        files_changed = self._files_changed(stats)
        if error is not None:
            message = self.redact(str(getattr(error, "message", error)))
            errors.append(message)
            if self.out.started:
                self.out.emit(ev.Error(message=message, code=getattr(error, "code", None), retryable=False))
            else:
                self.out.note(f"error: {message}")
        if not self.out.started:
            self.start_event()
        usage = stats.usage
        result = ev.Result(
            response=self.redact(stats.response),
            reasoning=self.redact(stats.reasoning) if stats.reasoning else None,
            total_tokens=usage.total_tokens,
            errors=errors,
            session_id=self.session_id,
            status=status,
            exit_code=exit_code,
            num_turns=stats.num_turns,
            duration_ms=int((self.io.monotonic() - self.t0) * 1000),
            usage=ev.UsageInfo(**usage.model_dump()),
            cost_usd=round(stats.cost_usd, 6) if stats.cost_usd is not None else None,
            tool_calls=stats.tool_calls,
            tool_errors=stats.tool_errors,
            blocked=stats.blocked,
            files_changed=files_changed,
            untrusted_content=stats.untrusted_content,
        )
        if self.structured_output is not None:
            result.structured_output = self.structured_output[0]
        self.out.emit(result)
        if self.out.session is not None:
            self.out.session.close()
        self.out.final(result)
        if self.opts.output_last_message and stats.finished:
            self._write_last_message(result.response)
        return exit_code

    def _files_changed(self, stats: Any) -> list[str]:
        """Every file the run changed: what tools reported plus what the snapshot comparison finds
        (shell commands change files too). Writes --diff-out when asked."""
        changed = list(stats.files_changed)
        if self.snapshot is None:
            return changed
        from mermaid_cli.config.loader import data_dir

        try:
            data_rel = data_dir(self.io.env).resolve().relative_to(self.project_root).as_posix() + "/"
        except ValueError:
            data_rel = None
        verified = getattr(getattr(self, "settings", None), "verify", None)
        if not stats.finished or getattr(getattr(self, "ctx", None), "background", None) or (verified and verified.commands):
            self.snapshot.changed()  # a cancelled call, a background process or --verify: compare again
        try:
            for path in self.snapshot.changed_files():
                if data_rel and path.startswith(data_rel):
                    continue
                if path not in changed:
                    changed.append(path)
            if self.opts.diff_out:
                target = self.io.cwd / self.opts.diff_out
                tmp = target.with_name(f".{target.name}.tmp")
                # the diff is a report a CI job uploads: secrets in changed files are masked too
                tmp.write_text(self.redact(self.snapshot.diff()), encoding="utf-8", errors="surrogateescape")
                os.replace(tmp, target)
        except Exception as exc:  # noqa: BLE001 - a report, never a reason to fail the run
            self.out.note(f"cannot compute the run's diff: {type(exc).__name__}: {exc}")
        finally:
            self.snapshot.close()
        return changed

    def _write_last_message(self, text: str) -> None:
        target = Path(self.opts.output_last_message)  # type: ignore[arg-type]
        if not target.is_absolute():
            target = self.io.cwd / target
        tmp = target.with_name(f".{target.name}.tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, target)
        except OSError as exc:
            self.out.note(f"cannot write --output-last-message {target}: {exc.strerror}")


def _tail(text: str, limit: int) -> str:
    return cap_text(text, limit, head_share=0)


def execute(opts: ExecOptions, io: RunIO) -> int:
    return Run(opts, io).execute()
