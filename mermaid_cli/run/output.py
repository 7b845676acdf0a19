"""Where a run's events go: stdout in the chosen format, the session file, progress on stderr.

Also owns what reaches stderr from libraries: every log record (the MCP SDK, httpx, asyncio,
`warnings`) goes through the run's redactor as one `mermaid: LOGGER: message` line, with no
traceback unless `MERMAID_DEBUG=1` (an exception is then shown whole, still redacted).

At a terminal (stderr a TTY; no `NO_COLOR`, `TERM=dumb`, `--plain`, `--no-interactive` or `-q`)
stderr is the `rich` terminal view instead of bare lines (`run/view/`, imported only then); stdout
is the same bytes either way. A hung-up terminal (SIGHUP) silences stderr; the run goes on.
"""

from __future__ import annotations

import json
import logging
import re
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from mermaid_cli.core import events as ev
from mermaid_cli.security.redact import StreamRedactor
from mermaid_cli.tools.termtext import clean_line

if TYPE_CHECKING:
    from mermaid_cli.run.view.terminal import TerminalView


def view_wanted(stderr_is_tty: bool, env: Mapping[str, str], *, plain: bool = False) -> bool:
    """Whether stderr gets the rich terminal view (docs/terminal.md) rather than plain lines."""
    if plain or not stderr_is_tty:
        return False
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":  # no-color.org: set and not empty
        return False
    return True


class Output:
    """Fans events out to stdout (per format), the session file and stderr progress."""

    def __init__(self, fmt: str, io: Any, quiet: bool, *, plain: bool = False) -> None:
        self.format = fmt
        self.io = io
        self.quiet = quiet
        self.writer = ev.JsonlWriter(io.stdout)
        self.session: Any = None  # SessionWriter once the session exists
        self.started = False
        #: `result` was emitted: it stays the stream's last line, whatever still ends after it
        self.ended = False
        self.redact: Callable[[str], str] = lambda text: text  # set once the run knows its secrets
        #: the run's known secret values, for the stream hold-back (set with `redact`)
        self.secrets: Callable[[], Iterable[str]] = tuple
        self._streams: dict[type, StreamRedactor] = {}
        # the run's clock (an injected one in tests); any io with stdout/stderr works
        self._clock: Callable[[], float] = getattr(io, "monotonic", None) or time.monotonic
        self._t0 = self._clock()
        self.hung_up = False
        self.view: TerminalView | None = None
        self.at_tty = at_tty = bool(getattr(io, "stderr_is_tty", False))  # any io with stdout/stderr
        if not quiet and view_wanted(at_tty, getattr(io, "env", {}), plain=plain):
            self.view = _terminal_view(self, io)
        if at_tty and getattr(io, "install_signal_handlers", False):
            self._catch_hangup()

    @property
    def approver(self) -> Callable[[str, str, str], Any] | None:
        """The prompt for a person at this terminal: the view's, else the plain one (a closed
        terminal answers no there too); None off a terminal."""
        if self.view is not None:
            return self.view.approver
        if not self.at_tty:
            return None
        from mermaid_cli.run.view.keys import LineApprover  # no rich in it

        return LineApprover(getattr(self.io, "stdin", None), self._write_prompt, lambda: self.hung_up)

    def _write_prompt(self, text: str) -> None:
        if self.hung_up:
            return
        try:
            self.io.stderr.write(self.redact(text))
            self.io.stderr.flush()
        except (OSError, ValueError):
            pass

    def _catch_hangup(self) -> None:
        """A closed terminal must not kill the run (SIGHUP's default): stop writing to it."""
        if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGHUP"):
            return

        def on_hangup(_signum: int, _frame: object) -> None:
            self.hung_up = True
            if self.view is not None:
                self.view.hang_up()

        try:
            signal.signal(signal.SIGHUP, on_hangup)
        except (OSError, ValueError):  # pragma: no cover - not the main interpreter
            pass

    def _stamp(self, event: ev._Event) -> None:
        """`ts`: ms since the run started, so a run can be drawn (`mermaid report`)."""
        if event.ts is None:
            event.ts = max(int((self._clock() - self._t0) * 1000), 0)

    def emit(self, event: ev._Event) -> None:
        if self.ended:
            # A task still stopping when the run ended (cancelled by the event loop's shutdown)
            # reports nothing: `result` is the last line of the stream and of the session file.
            return
        if isinstance(event, ev.Result):
            self.ended = True
        if isinstance(event, ev.Text | ev.Reasoning):
            # A secret split across deltas is redacted by no single delta: the stream redactor
            # joins them and emits only what no later delta can complete into a secret.
            stream = self._streams.get(type(event))
            if stream is None:
                stream = self._streams[type(event)] = StreamRedactor(
                    lambda t: self.redact(t), lambda: self.secrets()
                )
            delta = stream.feed(event.delta)
            if not delta:
                return
            event = type(event)(delta=delta)
        else:
            self._flush_streams()
        # stamped as it leaves, after any held-back text: `ts` never goes backwards in a stream
        self._stamp(event)
        keep = self.session is not None and not isinstance(event, (ev.Text, ev.Reasoning))
        if self.format == "jsonl" or keep:
            # once: the stdout line and the session's `event` are the same. Redacted whole, as
            # the session writer does: a secret must not reach stdout through any field (a tool
            # name, a gate's reason quoting the command), not only those redacted where made.
            encoded = self.redact(event.to_json())
            if self.format == "jsonl":
                self.writer.write_json(encoded)
            if keep:
                self.session.append_encoded("event", "event", encoded)
        self._progress(event)

    def _flush_streams(self) -> None:
        """The text block ended (any other event follows it): emit what was held back."""
        for kind, stream in list(self._streams.items()):
            rest = stream.flush()
            if not rest:
                continue
            held = kind(delta=rest)
            self._stamp(held)
            if self.format == "jsonl":
                self.writer.write(held)
            if self.view is not None:
                self.view.event(held)

    def _progress(self, event: ev._Event) -> None:
        if self.view is not None:
            self.view.event(event)
            return
        if isinstance(event, ev.Error):  # errors and warnings show even with -q
            self.note(("retrying: " if event.retryable else "error: ") + _visible(event.message))
            return
        if self.quiet:
            return
        # what the model chose (a path, a tool name, a command) is shown, never obeyed by the
        # terminal: an escape could retitle it or write the clipboard, a newline forge a line
        if isinstance(event, ev.ToolStarted):
            self.note(_visible(f"{event.call_id} {event.name} {_brief(event.arguments)}"))
        elif isinstance(event, ev.ToolFinished):
            mark = "ok" if event.status == "success" else event.status
            self.note(_visible(f"{event.call_id} {mark}: {event.error or event.summary}"))
        elif isinstance(event, ev.ApprovalDecided) and event.verdict == "deny":
            self.note(_visible(f"{event.call_id} denied by {event.by}: {event.reason or ''}"))

    def install_logging(self, *, debug: bool = False) -> None:
        """Route every library log record through `note` (redacted); replaces the handler an
        earlier run in this process installed."""
        root = logging.getLogger()
        for handler in list(root.handlers):
            if isinstance(handler, _LibraryLogHandler):
                root.removeHandler(handler)
        root.addHandler(_LibraryLogHandler(self, debug))
        root.setLevel(logging.DEBUG if debug else logging.WARNING)
        for name in ("mcp", "httpx", "httpcore"):  # their own levels or handlers must not bypass it
            lib = logging.getLogger(name)
            lib.propagate = True
            lib.handlers = [h for h in lib.handlers if isinstance(h, logging.NullHandler)]
        logging.captureWarnings(True)

    def note(self, line: str) -> None:
        if self.hung_up:
            return
        if self.view is not None:
            self.view.note(self.redact(line))
            return
        try:
            self.io.stderr.write(self.redact(f"mermaid: {line}\n"))
            self.io.stderr.flush()
        except (OSError, ValueError):
            pass

    def info(self, line: str) -> None:
        """Progress a CI log follows (session id, verify rounds, heartbeats); `-q` keeps only
        warnings and errors, which go through `note`."""
        if not self.quiet:
            self.note(line)

    def progress_line(self, line: str) -> None:
        """Streamed tool output (a long test run stays visibly alive)."""
        if self.view is not None:
            self.view.tool_output(self.redact(line))
        elif not self.quiet and not self.hung_up:
            try:
                self.io.stderr.write(self.redact(f"  | {_visible(clean_line(line))}\n"))
                self.io.stderr.flush()
            except (OSError, ValueError):
                pass

    def heartbeat(self, line: str) -> None:
        """The model is still working (run/heartbeat.py): a plain line, or the live status."""
        if self.view is not None:
            self.view.heartbeat()
        else:
            self.note(line)

    def final(self, result: ev.Result) -> None:
        self._stamp(result)
        if self.format == "jsonl":
            return  # the result line was already streamed
        if self.format == "json":
            payload = json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n"
        else:
            # stdout is the answer only: errors went to stderr as they happened (a failed run
            # leaves `> review.md` empty, never filled with an error message posing as the answer)
            body = result.response
            if self.format == "markdown" and result.errors:
                body += "\n\n---\n\n## Errors\n\n" + "".join(f"- {e}\n" for e in result.errors)
            payload = body if body.endswith("\n") or not body else body + "\n"
        self.writer.write_bytes(self.redact(payload).encode("utf-8", "replace"))
        if self.format in ("text", "markdown") and self.view is None:  # the view's summary has it
            self.info(f"session: {result.session_id}")


#: C0 and C1 controls but the tab, and DEL: what a terminal acts on instead of showing
_CONTROLS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def _visible(text: str) -> str:
    """`text` on one line with every control character shown as an escape (`\x1b`, `\n`)."""
    return _CONTROLS.sub(lambda m: "\\n" if m.group() == "\n" else f"\\x{ord(m.group()):02x}", text)


class _LibraryLogHandler(logging.Handler):
    """One redacted stderr line per record; a traceback only in debug mode."""

    def __init__(self, out: Output, debug: bool) -> None:
        super().__init__(logging.DEBUG if debug else logging.WARNING)
        self.out = out
        self.debug = debug

    def emit(self, record: logging.LogRecord) -> None:
        try:
            try:
                message = record.getMessage()
            except Exception:  # noqa: BLE001 - a bad format string in a library
                message = str(record.msg)
            exc = record.exc_info[1] if record.exc_info else None
            if exc is not None:
                if self.debug:
                    message += "\n" + "".join(traceback.format_exception(exc)).rstrip()
                else:
                    first = (str(exc).splitlines() or [""])[0][:200]
                    message += f" ({type(exc).__name__}: {first}; MERMAID_DEBUG=1 shows the traceback)"
            self.out.note(f"{record.name}: {message}")
        except Exception:  # noqa: BLE001 - logging must never take the run down
            pass


def _terminal_view(out: Output, io: Any) -> TerminalView:
    from mermaid_cli.run.view.console import terminal_console
    from mermaid_cli.run.view.terminal import TerminalView

    console, stream = terminal_console(io.stderr, io.env)
    # the wall clock, not the run's injected one: what the view reads must not shift the run's
    return TerminalView(console, redact=lambda text: out.redact(text), stdin=io.stdin, stream=stream)


def _brief(arguments: dict[str, Any] | None) -> str:
    if not arguments:
        return ""
    for key in ("command", "path", "url", "query", "pattern"):
        if isinstance(arguments.get(key), str):
            return arguments[key].splitlines()[0][:120] if arguments[key] else ""
    return ""
