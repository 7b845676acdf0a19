"""The terminal view of one run (docs/terminal.md): consumes the run's events and notes and
renders them with `rich` on stderr, a live status line at the bottom and, above it, one line per
finished tool call, the model's narration, warnings and errors, and at the end a summary table.

It never touches stdout. Everything it prints passes the run's redactor and loses terminal
control characters first. A hung-up terminal (SIGHUP) silences it and answers every later
approval with no; the run goes on."""

from __future__ import annotations

import atexit
import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from mermaid_cli.core import events as ev
from mermaid_cli.run.view import render
from mermaid_cli.run.view.console import TerminalStream
from mermaid_cli.tools.termtext import clean_text

if TYPE_CHECKING:
    from mermaid_cli.run.view.approval import RichApprover


@dataclass
class PendingApproval:
    """An approval the terminal view is waiting on."""

    call_id: str
    tool: str
    risk: str
    prompt: str


class TerminalView:
    """Events in, a rendered run out (on the console it was given)."""

    def __init__(
        self,
        console: Console,
        *,
        redact: Callable[[str], str] = lambda text: text,
        stdin: TextIO | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        live: bool = True,
        stream: TerminalStream | None = None,
    ) -> None:
        self.console = console
        self.redact = redact
        self.stdin = stdin
        self.monotonic = monotonic
        self.marks = render.Marks.for_encoding(console.encoding)
        self.state = render.RunState()
        self.root = Path.cwd()
        self.hung_up = False
        self._stream = stream
        self._use_live = live
        self._live: Live | None = None
        self._narration: list[str] = []
        self._turn_text = ""  # the last finished turn's text: narration if tools or a turn follow
        self._calls: dict[str, ev.ToolStarted] = {}
        self._pending: list[PendingApproval] = []
        self._prompting = False
        self._held: list[RenderableType] = []
        self._approver: RichApprover | None = None

    # -- what the run reports -------------------------------------------------------------------
    def event(self, event: ev._Event) -> None:
        now = self.monotonic()
        state = self.state
        if isinstance(event, ev.SessionStarted):
            state.model, state.started = self.clean(event.model), now
            self._phase("model", now)
            if event.cwd:
                self.root = Path(event.cwd)
            self._start_live()
        elif isinstance(event, ev.Text):
            if self._turn_text:  # a new turn speaks: the last one's words were narration
                self._show_narration(self._turn_text)
                self._turn_text = ""
            self._narration.append(event.delta)
            if state.phase != "writing":
                self._phase("writing", now)
        elif isinstance(event, ev.Reasoning):
            if state.phase != "thinking":
                self._phase("thinking", now)
        elif isinstance(event, ev.TurnDone):
            self._on_turn_done(event, now)
        elif isinstance(event, ev.ToolStarted):
            if self._turn_text:
                self._show_narration(self._turn_text)
                self._turn_text = ""
            self._calls[event.call_id] = event
            state.running[event.call_id] = render.RunningTool(
                self.clean(event.name), self.clean(render.brief(event.arguments)), now
            )
            self._phase("tools", now)
        elif isinstance(event, ev.ApprovalRequired):
            self._pending.append(PendingApproval(event.call_id, event.tool, event.risk, event.prompt))
        elif isinstance(event, ev.ToolFinished):
            self._on_tool_finished(event, now)
        elif isinstance(event, ev.TasksUpdated):
            state.tasks = (event.completed, event.total)
        elif isinstance(event, ev.Error):
            self.print(
                render.note_text(("retrying: " if event.retryable else "error: ") + self.clean(event.message))
            )
        elif isinstance(event, ev.VerifyFinished):
            mark = self.marks.ok if event.exit_code == 0 else self.marks.fail
            line = (
                f"{mark} verify (attempt {event.attempt}) {self.clean(event.command)}: exit {event.exit_code}"
            )
            self.print(Text(line, style="green" if event.exit_code == 0 else "red"))
        elif isinstance(event, ev.Result):
            self._on_result(event, now)
        self._refresh()

    def _on_turn_done(self, event: ev.TurnDone, now: float) -> None:
        state = self.state
        state.turns += 1
        if event.total_tokens is not None:
            state.tokens += event.total_tokens
        elif event.usage is not None:
            state.tokens += event.usage.input_tokens + event.usage.output_tokens
        if event.cost_usd is not None:
            state.cost = (state.cost or 0.0) + event.cost_usd
        self._turn_text = "".join(self._narration)
        self._narration.clear()
        self._phase("between", now)  # tools, another turn or the end follow

    def _on_tool_finished(self, event: ev.ToolFinished, now: float) -> None:
        started = self._calls.pop(event.call_id, None)
        self.state.running.pop(event.call_id, None)
        brief = self.clean(render.brief(started.arguments if started else None))
        cleaned = event.model_copy(
            update={"summary": self.clean(event.summary), "error": self.clean(event.error or "") or None}
        )
        if cleaned.decision is not None and cleaned.decision.reason:
            cleaned.decision = cleaned.decision.model_copy(
                update={"reason": self.clean(cleaned.decision.reason)}
            )
        self.print(render.tool_line(cleaned, brief, self.marks))
        if not self.state.running:
            self._phase("model", now)

    def _on_result(self, result: ev.Result, now: float) -> None:
        self._phase("done", now)
        self._stop_live()
        self._flush_held()
        closing = Text(self.marks.dot + " ", no_wrap=True, overflow="ellipsis")
        closing.append_text(render.status_text(self.state, now, self.marks))
        self.print(closing)
        self.print(render.summary_table(self._clean_result(result), self.marks))

    def _clean_result(self, result: ev.Result) -> ev.Result:
        return result.model_copy(
            update={
                "errors": [self.clean(e) for e in result.errors],
                "files_changed": [self.clean(f) for f in result.files_changed],
                "blocked": [{k: self.clean(str(v)) for k, v in b.items()} for b in result.blocked],
                "session_id": self.clean(result.session_id),
            }
        )

    def note(self, line: str) -> None:
        self.print(render.note_text(self.clean(line)))

    def tool_output(self, line: str) -> None:
        """A line of a running tool's output: the live view shows the latest under its call."""
        for tool in self.state.running.values():
            tool.last_output = self.clean(line).strip()[:200]
        if not self.state.running:
            self.print(Text(f"  | {self.clean(line)}", style="dim"))

    def heartbeat(self) -> None:
        """The model is still working: the status line already counts the seconds."""
        self._refresh()

    def hang_up(self) -> None:
        """The terminal closed (SIGHUP): say nothing more, answer no approvals. Signal-safe (flags)."""
        self.hung_up = True
        if self._stream is not None:
            self._stream.dead = True

    def close(self) -> None:
        self._stop_live()
        self._flush_held()

    @property
    def approver(self) -> RichApprover:
        from mermaid_cli.run.view.approval import RichApprover

        if self._approver is None:
            self._approver = RichApprover(self)
        return self._approver

    # -- helpers the approver uses ---------------------------------------------------------------
    def take_pending(self, tool: str, prompt: str) -> tuple[PendingApproval | None, ev.ToolStarted | None]:
        """The approval_required event (and its call's tool_started) an approver call answers."""
        for i, item in enumerate(self._pending):
            if item.tool == tool and item.prompt == prompt:
                del self._pending[i]
                return item, self._calls.get(item.call_id)
        return None, None

    @contextlib.contextmanager
    def prompting(self) -> Iterator[None]:
        """While a prompt waits, the live line is down and other output is held back."""
        self._prompting = True
        self._phase("asking", self.monotonic())
        self._stop_live()
        try:
            yield
        finally:
            self._prompting = False
            self._phase("tools", self.monotonic())
            self._flush_held()
            if self.state.started is not None and self.state.phase != "done":
                self._start_live()

    def clean(self, text: str) -> str:
        """Redacted, with terminal escapes and control characters gone, and paths inside the
        project shown relative to it (an outside path stays absolute: that is the news)."""
        text = clean_text(self.redact(text))
        prefix = str(self.root).rstrip(os.sep) + os.sep
        return text.replace(prefix, "") if len(prefix) > 1 else text

    def print(self, renderable: RenderableType) -> None:
        if self.hung_up:
            return
        if self._prompting:
            self._held.append(renderable)
            return
        if isinstance(renderable, Text) and renderable.no_wrap:
            # print() joins Text into a new one and loses its own no_wrap: say it again
            self.console.print(renderable, no_wrap=True, overflow=renderable.overflow or "ellipsis")
        else:
            self.console.print(renderable)

    # -- the live status line --------------------------------------------------------------------
    def _phase(self, phase: str, now: float) -> None:
        if self.state.phase != phase:
            self.state.phase, self.state.phase_since = phase, now

    def _show_narration(self, text: str) -> None:
        cleaned = self.clean(text).strip()
        if cleaned:
            self.print(render.narration(cleaned))

    def _flush_held(self) -> None:
        held, self._held = self._held, []
        for item in held:
            self.print(item)

    def _start_live(self) -> None:
        if not self._use_live or self._live is not None or self.hung_up:
            return
        self._live = Live(
            _LiveStatus(self),
            console=self.console,
            refresh_per_second=4,
            transient=True,
            redirect_stdout=False,  # stdout is the answer: never touched
            redirect_stderr=False,
        )
        self._live.start(refresh=True)
        atexit.register(self._stop_live)  # a run that dies still gives the cursor back

    def _stop_live(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            with contextlib.suppress(Exception):
                live.stop()

    def _refresh(self) -> None:
        if self._live is not None and not self.hung_up:
            with contextlib.suppress(Exception):
                self._live.refresh()


class _LiveStatus:
    """The live area: a spinner and the status line, then the calls still running."""

    def __init__(self, view: TerminalView) -> None:
        self.view = view
        ascii_only = view.marks.dot == "|"
        self.spinner = Spinner("line" if ascii_only else "dots", style="cyan")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        now = self.view.monotonic()
        frame = self.spinner.render(time.monotonic())
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append_text(frame if isinstance(frame, Text) else Text(str(frame)))
        line.append(" ")
        line.append_text(render.status_text(self.view.state, now, self.view.marks))
        yield line
        yield from render.running_lines(self.view.state, now, self.view.marks)
