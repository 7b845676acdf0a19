"""What one `mermaid exec` was given: its options (`ExecOptions`), the process's streams and clocks
(`RunIO`), the prompt from the argument and piped stdin, and the checks made on the options before
anything is loaded (exit 2 on a bad combination or an unwritable output path).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, TextIO

from mermaid_cli.core.errors import UsageError


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
    plain: bool = False  # --plain: plain stderr lines even at a terminal (docs/terminal.md)
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
    allowed_tools: list[str] = field(default_factory=list)  # --allowed-tools (config/flags.py)
    disallowed_tools: list[str] = field(default_factory=list)  # --disallowed-tools
    add_dirs: list[str] = field(default_factory=list)  # --add-dir: treated as inside the project


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


async def wait_for_piped(io: RunIO) -> str:
    """`read_piped`, from a pipe or socket on a thread of its own, so that a stdin left open (a
    producer that hangs) keeps neither a signal nor `--timeout` (the runner's, over all of
    assembly) from ending the run. A read still blocked then is left behind: the process exits
    without waiting for it."""
    if io.stdin is None or io.stdin_is_tty:
        return ""
    if not _may_block(io.stdin):  # /dev/null, a file, a test's stream: at once, no thread
        return read_piped(io)
    from mermaid_cli.core.daemon_read import on_daemon_thread

    return await on_daemon_thread(lambda: read_piped(io), "mermaid-stdin")


def _may_block(stream: object) -> bool:
    try:
        mode = os.fstat(stream.fileno()).st_mode  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # no descriptor: a stream in memory
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def resolve_prompt(prompt: str | None, piped: str) -> str:
    """The prompt argument, piped stdin, or both (stdin appended as a fenced block). An argument
    that is not UTF-8 (Python hands its bytes over as lone surrogates) gets U+FFFD for each bad
    byte, as stdin does: a lone surrogate would fail the provider request, exit 70."""
    if prompt is not None:
        try:
            prompt.encode("utf-8")
        except UnicodeEncodeError:
            try:
                prompt = prompt.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            except UnicodeEncodeError:  # not from argv's decoding: any lone surrogate
                prompt = prompt.encode("utf-8", "replace").decode("utf-8")
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


def project_root(cwd: Path, path: str | None) -> Path:
    """The project root: `--path` (relative to `cwd`), else `cwd`; resolved."""
    return (cwd / path).resolve() if path is not None else cwd.resolve()


def check_options(opts: ExecOptions, io: RunIO) -> Path:
    """Flag combinations and output paths, checked before anything is loaded (exit 2); returns
    the project root (`--path`, else the working directory), resolved."""
    root = project_root(io.cwd, opts.path)
    if opts.path is not None and not root.is_dir():
        raise UsageError(f"--path {opts.path}: not a directory")
    if opts.ephemeral and (opts.resume or opts.continue_):
        raise UsageError(
            "--ephemeral cannot be used with --resume or --continue (nothing is saved to resume)"
        )
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
    return root
