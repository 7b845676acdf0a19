"""Observe-only lifecycle hook events: `session_start`, `after_tool_use`, `turn_done`,
`approval_requested`, `checkpoint`, `session_end`.

`LifecycleObserver` is the one object the runner calls: `watch(emit)` wraps the run's event sink
and turns the protocol events it sees (`session_started`, `tool_finished`, `turn_done`,
`approval_required`, `result`) into hook events; `checkpointing(fn)` wraps the checkpoint store
for `checkpoint`. Hooks run in order on one worker thread (off the event loop, never delaying a
tool call); `session_end` waits for the queue to drain (bounded), since the process exits next.
A failing observer is a warning on stderr, never a change to the run.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mermaid_cli.config.sections.hooks import LIFECYCLE_EVENTS, HookSpec
from mermaid_cli.core import events as ev
from mermaid_cli.policy.hooks import OBSERVER_TIMEOUT, run_observers

#: how long the end of a run waits for observers still queued
DRAIN_TIMEOUT = OBSERVER_TIMEOUT * 2 + 5
REPORT_CAP = 16_000

Emit = Callable[[Any], None]
Checkpoint = Callable[[list[Path], str], object]


class LifecycleObserver:
    def __init__(
        self,
        hooks: Mapping[str, list[HookSpec]],
        note: Callable[[str], None],
        *,
        project_root: Path,
        plugins: list[str] | None = None,
        skills: int = 0,
    ) -> None:
        self._hooks = {event: list(hooks.get(event, ())) for event in LIFECYCLE_EVENTS}
        self._note = note
        self._project_root = project_root
        self._plugins = list(plugins or [])
        self._skills = skills
        self.session_id = ""
        self._turns = 0
        self._queue: queue.Queue[tuple[str, dict[str, Any]] | None] = queue.Queue()
        self._warnings: list[str] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def active(self) -> bool:
        return any(self._hooks.values())

    # -- what the runner calls -------------------------------------------------------------------
    def watch(self, emit: Emit) -> Emit:
        """`emit`, also feeding the hook events; `emit` itself when no observer is configured."""
        if not self.active:
            return emit

        def watched(event: Any) -> None:
            emit(event)
            self.on_event(event)

        return watched

    def checkpointing(self, checkpoint: Checkpoint | None) -> Checkpoint | None:
        """The checkpoint store, also firing `checkpoint` with the id it returned."""
        if checkpoint is None or not self._hooks["checkpoint"]:
            return checkpoint
        inner = checkpoint

        def wrapped(paths: list[Path], reason: str) -> object:
            cid = inner(paths, reason)
            self.fire(
                "checkpoint",
                id=str(cid),
                project_path=str(self._project_root),
                files=[str(p) for p in paths],
                reason=reason,
            )
            return cid

        return wrapped

    def on_event(self, event: Any) -> None:
        """Map one protocol event to its hook event, if it has one."""
        if isinstance(event, ev.SessionStarted):
            self.session_id = event.session_id
            self.fire(
                "session_start",
                model=event.model,
                project_path=event.cwd,
                safety_mode=event.safety_mode,
                plugins=self._plugins,
                skills=self._skills,
            )
        elif isinstance(event, ev.ToolFinished):
            self.fire(
                "after_tool_use",
                call_id=event.call_id,
                tool=event.name,
                status=event.status,
                summary=event.summary,
            )
        elif isinstance(event, ev.TurnDone):
            self._turns += 1
            self.fire(
                "turn_done", turn=self._turns, total_tokens=event.total_tokens, stop_reason=event.stop_reason
            )
        elif isinstance(event, ev.ApprovalRequired):
            self.fire("approval_requested", call_id=event.call_id, tool=event.tool, risk=event.risk)
        elif isinstance(event, ev.Result):
            self.session_id = event.session_id or self.session_id
            self.fire(
                "session_end",
                status=event.status,
                exit_code=event.exit_code,
                report=event.response[:REPORT_CAP],
                errors=event.errors,
            )
            self.close()

    def fire(self, event: str, **fields: Any) -> None:
        """Queue `event` for its observers (payload: `event`, `session_id`, then `fields`)."""
        self._flush()
        if self._closed or not self._hooks.get(event):
            return
        self._queue.put((event, {"event": event, "session_id": self.session_id, **fields}))
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="mermaid-lifecycle-hooks", daemon=True)
            self._thread.start()

    def close(self, timeout: float = DRAIN_TIMEOUT) -> None:
        """Wait (bounded) for the queued observers, then print their warnings."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout)
            if self._thread.is_alive():
                self._warn(f"lifecycle hooks still running after {timeout:g}s; not waited for")
        self._flush()

    # -- the worker ------------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            event, payload = item
            try:
                warnings = asyncio.run(run_observers(self._hooks[event], event, payload))
            except Exception as exc:  # noqa: BLE001 - an observer must never break the run
                warnings = [f"{event} hooks failed: {type(exc).__name__}: {exc}"]
            for warning in warnings:
                self._warn(warning)

    def _warn(self, text: str) -> None:
        with self._lock:
            self._warnings.append(text)

    def _flush(self) -> None:
        """Warnings are printed from the caller's thread (the run's), never from the worker."""
        with self._lock:
            pending, self._warnings = self._warnings, []
        for warning in pending:
            self._note(f"warning: hook: {warning}")
