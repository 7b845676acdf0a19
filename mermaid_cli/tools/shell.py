"""`execute_command`: run a shell command for the model.

`bash -c` in its own session and process group, stdin at EOF, both pipes drained concurrently
and streamed line by line to `ctx.progress`, combined output kept head+tail within 256 KiB.
A timeout (default 120 s, at most 600 s, from `[exec]`) kills the whole tree. A foreground
command owns its tree: whatever it left running when it exits is stopped too (a grandchild that
keeps the pipe open gets a short grace first); long-lived servers belong in `mode="background"`.

A non-zero exit is an error result (`is_error=True`) that still carries the output, so the loop
counts it and the model sees why; `metadata["exit_code"]` holds the code (128+N when signal N
killed it, shell style, with `metadata["signal"]` naming it).
"""

from __future__ import annotations

import os
import signal
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from mermaid_cli.config.sections.exec import ExecSection
from mermaid_cli.core.types import ToolResult
from mermaid_cli.security.childenv import scrubbed_env
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext
from mermaid_cli.tools.call_options import uncapped
from mermaid_cli.tools.proctree import Child
from mermaid_cli.tools.termtext import clean_bytes, clean_line, decode

if TYPE_CHECKING:
    from mermaid_cli.security.sandbox import PreparedSandbox

MAX_OUTPUT_BYTES = 256 * 1024
#: with the `scratchpad` parameter (`tools.call_options`); a bound on memory only
SCRATCHPAD_OUTPUT_BYTES = 64 * 1024 * 1024
# After the main process exits, how long a descendant may keep the pipes open.
PIPE_GRACE_SECS = 1.0
KILL_GRACE_SECS = 2.0
# A single line longer than this is passed on in pieces (binary junk has few newlines).
MAX_LINE_BYTES = 16 * 1024
PROGRESS_LINE_CHARS = 500
PROGRESS_LINES_PER_SEC = 100


class HeadTail:
    """Keeps the first and last `limit/2` bytes of everything added, counting what was dropped."""

    def __init__(self, limit: int = MAX_OUTPUT_BYTES) -> None:
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self.head = bytearray()
        self._tail: deque[bytes] = deque()  # appended blocks, oldest first
        self._tail_size = 0
        self.dropped = 0

    def add(self, data: bytes) -> None:
        room = self._head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
            if not data:
                return
        self._tail.append(data)
        self._tail_size += len(data)
        while self._tail_size > self._tail_limit:
            excess = self._tail_size - self._tail_limit
            first = self._tail[0]
            if len(first) <= excess:
                self._tail.popleft()
                self._tail_size -= len(first)
                self.dropped += len(first)
            else:
                self._tail[0] = first[excess:]
                self._tail_size -= excess
                self.dropped += excess

    @property
    def tail(self) -> bytes:
        return b"".join(self._tail)

    def text(self) -> str:
        head = clean_bytes(bytes(self.head))
        tail = clean_bytes(self.tail)
        if not self.dropped:
            return head + tail
        return f"{head}\n[... {self.dropped} bytes of output cut from the middle ...]\n{tail}"


class _Lines:
    """Cuts one stream at line boundaries, so the two streams interleave line by line.

    Works on blocks of complete lines rather than single lines: a command printing millions of
    short lines must not cost a Python call per line. A partial line longer than MAX_LINE_BYTES
    (binary junk has few newlines) is passed on in pieces."""

    def __init__(self) -> None:
        self._partial = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._partial += data
        out: list[bytes] = []
        last = self._partial.rfind(b"\n")
        if last >= 0:
            out.append(bytes(self._partial[: last + 1]))
            del self._partial[: last + 1]
        while len(self._partial) >= MAX_LINE_BYTES:
            out.append(bytes(self._partial[:MAX_LINE_BYTES]))
            del self._partial[:MAX_LINE_BYTES]
        return out

    def flush(self) -> list[bytes]:
        if not self._partial:
            return []
        rest = bytes(self._partial) + b"\n"
        self._partial.clear()
        return [rest]


class _Progress:
    """Forwards lines to `ctx.progress`, at most PROGRESS_LINES_PER_SEC (a flood is summarised)."""

    def __init__(self, sink: Callable[[str], None]) -> None:
        self._sink = sink
        self._window = 0.0
        self._count = 0
        self._suppressed = 0

    def block(self, block: bytes, lines: int) -> None:
        """`block` holds `lines` complete lines (or is one piece of a long line when `lines` is 0)."""
        lines = lines or 1
        now = time.monotonic()
        if now - self._window >= 1.0:
            self.flush()
            self._window, self._count = now, 0
        budget = PROGRESS_LINES_PER_SEC - self._count
        if budget <= 0:
            self._suppressed += lines
            return
        shown = block.split(b"\n", budget)[: min(budget, lines)]
        self._count += len(shown)
        self._suppressed += lines - len(shown)
        for raw in shown:
            self._emit(clean_line(decode(raw))[:PROGRESS_LINE_CHARS])

    def flush(self) -> None:
        if self._suppressed:
            self._emit(f"[... {self._suppressed} lines of output not shown ...]")
            self._suppressed = 0

    def _emit(self, text: str) -> None:
        try:
            self._sink(text)
        except Exception:  # noqa: BLE001 - a broken progress sink must not break the command
            pass


@dataclass
class CommandOutcome:
    """How a command ended and what it printed."""

    output: str
    exit_code: int | None
    signal: str | None = None
    timed_out: bool = False
    stdout_lines: int = 0
    stderr_lines: int = 0
    truncated_bytes: int = 0
    notes: list[str] = field(default_factory=list)


async def run_command(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    on_line: Callable[[str], None] = lambda _line: None,
    max_output: int = MAX_OUTPUT_BYTES,
    sandbox: PreparedSandbox | None = None,
) -> CommandOutcome:
    """Run `command` under `bash -c` and collect its output. Never leaves a process behind,
    including when the calling task is cancelled. With `sandbox`, the kernel confines it."""
    buffer = HeadTail(max_output)
    splitters = {1: _Lines(), 2: _Lines()}
    counts = {1: 0, 2: 0}
    progress = _Progress(on_line)

    def take(stream: int, blocks: list[bytes]) -> None:
        for block in blocks:
            buffer.add(block)
            lines = block.count(b"\n")
            counts[stream] += lines
            progress.block(block, lines)

    def on_output(stream: int, data: bytes) -> None:
        take(stream, splitters[stream].feed(data))

    notes: list[str] = []
    child = await Child.spawn(["bash", "-c", command], cwd=cwd, env=env, on_output=on_output, sandbox=sandbox)
    timed_out = False
    try:
        if not await child.wait(timeout):
            timed_out = True
            notes.append(f"timed out after {_secs(timeout)}; the process tree was killed")
            await child.terminate_tree(KILL_GRACE_SECS)
            await child.wait_eof(0.5)
        else:
            if not await child.wait_eof(PIPE_GRACE_SECS):
                notes.append(
                    "a background process kept the output open after the command exited; it was stopped"
                )
                await child.terminate_tree(KILL_GRACE_SECS)
                await child.wait_eof(0.5)
            elif child.tree_alive():
                notes.append(
                    "processes the command left running were stopped (use mode=background for servers)"
                )
                await child.terminate_tree(KILL_GRACE_SECS)
    finally:
        await child.aclose()
    for stream, splitter in splitters.items():
        take(stream, splitter.flush())
    progress.flush()

    rc = child.popen.returncode
    sig_name: str | None = None
    exit_code: int | None = rc
    if rc is not None and rc < 0:
        sig_name = _signal_name(-rc) or f"signal {-rc}"
        exit_code = 128 - rc
        if not timed_out:
            notes.append(f"killed by {sig_name}")
    elif rc is not None and rc > 128 and (name := _signal_name(rc - 128)):
        notes.append(f"exit code {rc} usually means a process was killed by {name}")
    return CommandOutcome(
        output=buffer.text().rstrip("\n"),
        exit_code=exit_code,
        signal=sig_name,
        timed_out=timed_out,
        stdout_lines=counts[1],
        stderr_lines=counts[2],
        truncated_bytes=buffer.dropped,
        notes=notes,
    )


def _signal_name(number: int) -> str | None:
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def _secs(value: float) -> str:
    return f"{value:g} s"


# -- the tool ----------------------------------------------------------------------------------


class ExecuteCommandArgs(ToolArgs):
    command: str = Field(description="Shell command, run with bash -c. Stdin is empty.")
    working_dir: str | None = Field(
        default=None, description="Directory to run in, relative to the project root (default: the root)."
    )
    timeout: float | None = Field(
        default=None, gt=0, description="Seconds before the command is killed (default 120, max 600)."
    )
    mode: Literal["wait", "foreground", "background"] = Field(
        default="wait",
        description="wait: run to completion. background: start it and return an id for background_process.",
    )


def exec_settings(ctx: ToolContext) -> ExecSection:
    section = getattr(ctx.settings, "exec", None)
    return section if section is not None else ExecSection()


def child_env(ctx: ToolContext) -> dict[str, str]:
    if ctx.child_env is not None:
        return dict(ctx.child_env)
    return scrubbed_env(os.environ, exec_settings(ctx).env_allow)


def resolve_working_dir(ctx: ToolContext, working_dir: str | None) -> Path | str:
    """The directory to run in, or an error message when it is outside the project or missing."""
    root = ctx.project_root.resolve()
    if not working_dir:
        return root
    target = (root / working_dir).resolve()
    if target != root and root not in target.parents:
        return f"working_dir {working_dir!r} is outside the project ({root}); use a path inside it"
    if not target.is_dir():
        return f"working_dir {working_dir!r} is not a directory"
    return target


class ExecuteCommand(Tool):
    name = "execute_command"
    description = (
        "Run a shell command (bash -c) in the project and return its combined output and exit code. "
        "Use mode=background for servers and watchers, then background_process."
    )
    Args = ExecuteCommandArgs
    category = "shell"
    starts_process = True

    def category_for(self, arguments: dict[str, Any]) -> str:
        # a background command starts something that outlives the call
        return "process" if arguments.get("mode") == "background" else self.category

    async def run(self, args: ExecuteCommandArgs, ctx: ToolContext) -> ToolResult:
        cwd = resolve_working_dir(ctx, args.working_dir)
        if isinstance(cwd, str):
            return ToolResult.error(cwd)
        env = child_env(ctx)
        if args.mode == "background":
            from mermaid_cli.tools.processes import registry_for

            return await registry_for(ctx).start(args.command, cwd=cwd, env=env, sandbox=ctx.sandbox)

        section = exec_settings(ctx)
        timeout = float(args.timeout or section.default_timeout)
        notes: list[str] = []
        if timeout > section.max_timeout:
            notes.append(f"timeout {_secs(timeout)} clamped to the maximum {section.max_timeout} s")
            timeout = float(section.max_timeout)

        try:
            outcome = await run_command(
                args.command,
                cwd=cwd,
                env=env,
                timeout=timeout,
                on_line=ctx.progress,
                sandbox=ctx.sandbox,
                # into a scratchpad entry (an image as base64, a PDF's text): the whole output
                max_output=SCRATCHPAD_OUTPUT_BYTES if uncapped() else MAX_OUTPUT_BYTES,
            )
        except OSError as exc:  # bash missing, cwd vanished, fork failed
            return ToolResult.error(f"could not start the command: {exc}")
        notes.extend(outcome.notes)
        return _result(outcome, notes)


def _result(outcome: CommandOutcome, notes: list[str]) -> ToolResult:
    body = outcome.output if outcome.output else "(no output)"
    trailer = [f"[exit code {outcome.exit_code}]"] + [f"[{note}]" for note in notes]
    metadata: dict[str, Any] = {
        "exit_code": outcome.exit_code,
        "timed_out": outcome.timed_out,
        "stdout_lines": outcome.stdout_lines,
        "stderr_lines": outcome.stderr_lines,
    }
    if outcome.signal:
        metadata["signal"] = outcome.signal
    if outcome.truncated_bytes:
        metadata["truncated_bytes"] = outcome.truncated_bytes
    if outcome.timed_out:
        summary = next((n for n in notes if n.startswith("timed out")), "timed out")
    elif outcome.exit_code == 0:
        summary = "command completed (exit 0)"
    else:
        summary = f"command failed (exit {outcome.exit_code})"
    return ToolResult(
        content=body + "\n\n" + "\n".join(trailer),
        is_error=outcome.timed_out or outcome.exit_code != 0,
        summary=summary,
        metadata=metadata,
    )
