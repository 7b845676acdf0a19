"""The steps `run.assemble` takes before the loop can start, one function per part: the settings
(every config layer with the flags on top), the conversation to resume, the session file, the
kernel sandbox and the tool context. Each reads what it needs explicitly and records what the
run has learned so far on the `Draft`, so a run that fails halfway still reports it.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mermaid_cli import __version__
from mermaid_cli.core import events as ev
from mermaid_cli.core.errors import UsageError
from mermaid_cli.core.types import Message
from mermaid_cli.run.options import ExecOptions, RunIO
from mermaid_cli.run.output import Output

if TYPE_CHECKING:
    from mermaid_cli.agent.loop import Agent
    from mermaid_cli.config.loader import Settings
    from mermaid_cli.run.lineage import ChildTerms, Tree
    from mermaid_cli.security.redact import Redactor
    from mermaid_cli.security.sandbox.run import RunSandbox
    from mermaid_cli.store.checkpoints import CheckpointStore
    from mermaid_cli.store.sessions import SessionWriter
    from mermaid_cli.tools.base import ToolContext
    from mermaid_cli.tools.tasks import TaskStore

Cleanup = Callable[[], Awaitable[None] | None]


class LiveRedactor:
    """The run's redactor. Secrets learned during the run (a key from the keyring) join it, and
    every holder of this object redacts them from then on."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor

    def __call__(self, text: str) -> str:
        return self._redactor.redact(text)

    def add(self, secret: str) -> None:
        if secret:
            self._redactor = self._redactor.with_secrets([secret])

    @property
    def secrets(self) -> frozenset[str]:
        return self._redactor.secrets


@dataclass
class Draft:
    """What assembly has learned so far. The runner keeps it: `session_started` and `result`
    report it however far assembly got, and its cleanups run however the run ends."""

    project_root: Path
    model_id: str
    safety_mode: str
    t0: float
    session_id: str = ""
    tools: list[str] = field(default_factory=list)
    limits: dict[str, int | float | None] = field(default_factory=dict)
    policy_digest: str | None = None
    settings: Settings | None = None
    redactor: LiveRedactor | None = None
    sandbox: RunSandbox | None = None
    #: the loop, once built: the gate's reviewer and budget callbacks read it at call time
    agent: Agent | None = None
    #: the subagent tree this run belongs to (the result lists its children)
    tree: Tree | None = None
    cleanups: list[Cleanup] = field(default_factory=list)
    #: --add-dir, resolved: inside the project for this run's tools and sandbox
    added_dirs: tuple[str, ...] = ()
    #: enabled plugins and the skill count, for `session_started` (extensions/session.py)
    plugins: list[str] = field(default_factory=list)
    skills: int = 0
    #: errors found while assembling, emitted right after `session_started`
    pending_errors: list[ev.Error] = field(default_factory=list)

    def redact(self, text: str) -> str:
        return self.redactor(text) if self.redactor is not None else text

    @property
    def deadline(self) -> float | None:
        """When `--timeout` ends the run, on `t0`'s clock; None until the settings are loaded."""
        return None if self.settings is None else self.t0 + self.settings.run.timeout


def load_run_settings(opts: ExecOptions, io: RunIO, out: Output, draft: Draft) -> Settings:
    """Every config layer with the flags on top; then what follows from the settings: the
    digest, the limits and the redactor (installed on the output)."""
    from mermaid_cli.config import loader as cfg
    from mermaid_cli.config.flags import ToolRules
    from mermaid_cli.config.sections.safety import policy_digest
    from mermaid_cli.security.redact import Redactor

    policy_layer = None
    if opts.policy is not None:
        from mermaid_cli.policy import find_preset, load_preset

        policy_layer = (f"--policy {find_preset(opts.policy)}", load_preset(opts.policy))
    loaded = cfg.load_settings(
        project_root=draft.project_root,
        env=io.env,
        profile=opts.profile,
        policy=policy_layer,
        overrides=list(opts.config_overrides),
        flags=_flag_layer(opts),
        tool_rules=ToolRules(tuple(opts.allowed_tools), tuple(opts.disallowed_tools)),
    )
    for warning in loaded.warnings:
        out.note(warning)
    settings = draft.settings = loaded.settings
    if os.environ.pop("_MERMAID_SET_PYDANTIC_PLUGINS", None):
        os.environ.pop("PYDANTIC_DISABLE_PLUGINS", None)  # child processes must not inherit it
        _keep_pydantic_plugins_off()
    draft.safety_mode = settings.safety.mode
    draft.policy_digest = policy_digest(settings.safety)
    draft.model_id = settings.model or draft.model_id
    run = settings.run
    draft.limits = {
        "max_turns": run.max_turns,
        "max_tokens": run.max_tokens,
        "max_cost": run.max_cost,
        "timeout": run.timeout,
    }
    redactor = draft.redactor = LiveRedactor(Redactor.from_environment(io.env, extra=opts.masks))
    out.redact = redactor
    out.secrets = lambda: redactor.secrets  # the stream hold-back's window
    out.install_logging(debug=io.env.get("MERMAID_DEBUG") == "1")
    return settings


def _keep_pydantic_plugins_off() -> None:
    """pydantic reads PYDANTIC_DISABLE_PLUGINS at every model class it builds, not once: with the
    variable gone, the next model built (the tools, the provider, imported after this) would scan
    every installed distribution's entry points, ~260 M instructions before the first request in
    a dev environment (issue 23). An empty plugin cache keeps pydantic's "no plugins" answer. (The
    CLI's stand-in loader, when pydantic was not imported before it, has no cache and finds none.)"""
    from pydantic.plugin import _loader

    if getattr(_loader, "_plugins", {}) is None:
        _loader._plugins = {}


def _flag_layer(opts: ExecOptions) -> dict[str, object]:
    """The command line's settings, by dotted key (None: the flag was not given)."""
    return {
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


@dataclass(frozen=True)
class History:
    """The conversation a run continues (empty for a new one) and where its session log stands."""

    session_id: str = ""
    messages: list[Message] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)
    seq: int = 0
    next_index: int = 0
    compactions: int = 0
    tasks: dict[str, object] | None = None
    #: the children the session had spawned (`run.saved_child.SavedChild` dicts)
    agents: object = None
    #: a subagent's session file (under its parent's session), whether it exists yet or not
    path: Path | None = None


def load_history(
    opts: ExecOptions, project_root: Path, out: Output, *, child_session: Path | None = None
) -> History:
    """Resume, continue or new. A missing session is exit 2, never a silent fresh start. A
    subagent continues its own session file when it has one (a follow-up)."""
    from mermaid_cli.store.sessions import latest_session_id, load_session, read_session_file

    if child_session is not None:
        child_id = f"{child_session.parent.name.removesuffix('.agents')}.{child_session.stem}"
        if not child_session.is_file():
            return History(session_id=child_id, path=child_session)
        child = read_session_file(child_session)
        return History(
            session_id=child_id,
            messages=child.messages,
            ids=child.context_ids,
            seq=child.last_seq,
            next_index=max(child.all_messages, default=-1) + 1,
            compactions=child.compactions,
            path=child_session,
        )
    if not (opts.resume or opts.continue_):
        return History()
    sid = opts.resume
    if opts.continue_:
        sid = latest_session_id(project_root)
        if sid is None:
            raise UsageError(f"--continue: no saved session found for {project_root}")
    data = load_session(project_root, sid or "")
    for bad in data.bad_lines:
        out.note(f"session file: skipped unreadable line {bad}")
    tasks = data.state.get("tasks")
    return History(
        session_id=sid or "",
        messages=data.messages,
        ids=data.context_ids,
        seq=data.last_seq,
        next_index=max(data.all_messages, default=-1) + 1,
        compactions=data.compactions,
        tasks=tasks if isinstance(tasks, dict) else None,
        agents=data.state.get("agents"),
    )


def open_session(opts: ExecOptions, io: RunIO, history: History, draft: Draft, out: Output) -> SessionWriter:
    """The session file: appended to when resuming, created otherwise (under a private temp dir
    with --ephemeral). Sets `draft.session_id` and `out.session`."""
    from mermaid_cli.store.sessions import SessionWriter, create_session

    root, redact = draft.project_root, draft.redact
    continuing = bool(history.session_id) and (history.path is None or history.path.is_file())
    try:
        if history.path is not None:  # a subagent: its file under the parent's session
            history.path.parent.mkdir(parents=True, exist_ok=True)
            writer = SessionWriter(history.path, seq=history.seq, redact=redact, clock=io.clock)
            writer.message_count = history.next_index
            writer.compactions = history.compactions
            draft.session_id = history.session_id
        elif continuing:
            path = root / ".mermaid" / "conversations" / f"{history.session_id}.jsonl"
            writer = SessionWriter(path, seq=history.seq, redact=redact, clock=io.clock)
            writer.message_count = history.next_index
            writer.compactions = history.compactions
        else:
            # --ephemeral: the session file lives in a private temp dir that goes with the run
            # (context_archive still reads it); nothing is left in the project
            store_root = root
            if opts.ephemeral:
                store_root = Path(tempfile.mkdtemp(prefix="mermaid-ephemeral-"))
                draft.cleanups.append(lambda: shutil.rmtree(store_root, ignore_errors=True))
            draft.session_id, writer = create_session(store_root, io.clock(), redact=redact, clock=io.clock)
    except OSError as exc:
        where = root / ".mermaid" / "conversations"
        raise UsageError(f"cannot write the session under {where}: {exc.strerror or exc}") from None
    if not continuing:
        writer.append(
            "started",
            session_id=draft.session_id,
            model=draft.model_id,
            cwd=str(root),
            cli_version=__version__,
        )
    writer.append("run", model=draft.model_id, resumed=bool(history.messages), safety_mode=draft.safety_mode)
    # from here a full disk costs the session file its rest, never the run (nor a half line)
    writer.on_lost = lambda why: out.note(f"warning: {why}; the run goes on")
    out.session = writer
    draft.cleanups.append(writer.close)
    return writer


def narrow_settings(settings: Settings, terms: ChildTerms) -> None:
    """A subagent's settings: its mode is the one recorded at spawn (nothing a config layer says
    loosens it) and the MCP servers its lineage denies are not started."""
    from mermaid_cli.run.lineage import stricter

    settings.safety.mode = stricter(settings.safety.mode, terms.mode)
    if terms.deny_servers:
        settings.mcp_servers = {k: v for k, v in settings.mcp_servers.items() if k not in terms.deny_servers}


def start_sandbox(settings: Settings, io: RunIO, draft: Draft, note: Callable[[str], None]) -> RunSandbox:
    """The kernel sandbox for every process started for the model (DESIGN §4.1): built once,
    before the first model call; exit 2 here when it cannot be had."""
    from mermaid_cli.security.sandbox.run import RunSandbox

    try:
        sandbox = draft.sandbox = RunSandbox.start(
            enforce=settings.sandbox.mode,
            safety_mode=settings.safety.mode,
            network_denied=settings.safety.network == "deny",
            confine_fs=settings.safety.filesystem == "project",
            project_root=draft.project_root,
            writable_roots=[*settings.sandbox.writable_roots, *draft.added_dirs],
            readable_roots=[*settings.sandbox.readable_roots, *draft.added_dirs],
            env=io.env,
        )
    except ValueError as exc:
        raise UsageError(f"[sandbox]: {exc}") from None
    for warning in sandbox.warnings:
        note(warning)
    if sandbox.degraded:
        draft.pending_errors.append(ev.Error(message=sandbox.warnings[-1], code="sandbox_degraded"))
    settings.safety.mark_sandboxed(sandbox.confining)
    return sandbox


def tool_context(
    settings: Settings,
    io: RunIO,
    *,
    draft: Draft,
    sandbox: RunSandbox,
    writer: SessionWriter,
    out: Output,
    interactive: bool,
    tasks: dict[str, object] | None,
) -> ToolContext:
    """What the tools may use during the run; task-list changes are saved for --resume."""
    from mermaid_cli.config import loader as cfg
    from mermaid_cli.security.childenv import scrubbed_env
    from mermaid_cli.store.sessions import archive_of
    from mermaid_cli.tools.base import ToolContext

    def tool_event(event: ev._Event | dict[str, object]) -> None:
        if isinstance(event, dict):  # a tool may emit an event's dict form
            event = ev.parse_event(json.dumps(event))
        if isinstance(event, ev.TasksUpdated) and ctx.tasks is not None:
            writer.append("state", tasks=ctx.tasks.to_dict())
        out.emit(event)

    ctx = ToolContext(
        project_root=draft.project_root,
        session_id=draft.session_id,
        settings=settings,
        progress=out.progress_line,
        emit=tool_event,
        interactive=interactive,
        child_env=sandbox.child_env(scrubbed_env(io.env, settings.exec.env_allow)),
        sandbox=sandbox.prepared,
    )
    ctx.user_config_dir = cfg.user_config_dir(io.env)
    ctx.safety_mode = settings.safety.mode
    ctx.redact = draft.redact  # memory refuses anything the run would redact
    ctx.archive = lambda: archive_of(writer.path)
    if tasks is not None:
        ctx.tasks = _restored_tasks(tasks)
    if settings.safety.checkpoint_on_mutation:
        ctx.checkpoint = _checkpoints(
            cfg.data_dir(io.env), draft.project_root, draft.session_id, lambda: ctx.path_rules
        )
    return ctx


def _checkpoints(
    data_dir: Path,
    project_root: Path,
    session_id: str,
    path_rules: Callable[[], Callable[[str, str], str | None] | None],
) -> Callable[[list[Path], str], str]:
    """The run's checkpoint store, loaded (with its pydantic models) on the first file change: no
    model request waits for it, and a run that changes no file never builds it (issue 23).
    `path_rules`: the gate's (`ToolContext.path_rules`, set after this), which a copy obeys too."""
    store: CheckpointStore | None = None
    root = Path(os.path.realpath(project_root))  # resolved now, as the store would at start

    def refuse(path: str) -> str | None:
        rules = path_rules()
        return rules(path, "read") if rules is not None else None

    def checkpoint(paths: list[Path], reason: str) -> str:
        nonlocal store
        if store is None:
            from mermaid_cli.store.checkpoints import CheckpointStore

            store = CheckpointStore(data_dir, root, session_id, refuse=refuse)
        return store(paths, reason)

    return checkpoint


def _restored_tasks(saved: dict[str, object]) -> TaskStore:
    from mermaid_cli.tools.tasks import TaskStore

    return TaskStore.from_dict(saved)
