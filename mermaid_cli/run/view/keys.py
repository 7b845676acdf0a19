"""One answer to an approval prompt, read from the terminal: `1` yes, `2` yes and don't ask again
(this session), `3`, `n` or Esc no. Other keys are ignored (a stray Enter from the last prompt
answers nothing), and so are keys typed before the prompt appeared (`discard_typeahead`). End
of input, a hung-up terminal or a cancelled run answer no.

The read polls, so a run that is cancelled (Ctrl-C, timeout) or whose terminal hangs up while a
prompt waits does not leave a thread blocked on stdin."""

from __future__ import annotations

import os
import select
from collections.abc import Callable
from typing import TextIO

ANSWERS = {"1": "once", "2": "always", "3": "no", "n": "no", "N": "no", "\x1b": "no", "\x04": "no"}
POLL_SECS = 0.2


def discard_typeahead(stdin: TextIO | None) -> None:
    """Drop keys typed before the prompt is shown (called before it is printed: a key typed in
    answer to the prompt must never be lost)."""
    try:
        import termios

        if stdin is not None:
            termios.tcflush(stdin.fileno(), termios.TCIFLUSH)
    except (ImportError, OSError, ValueError, AttributeError):
        pass


def read_answer(stdin: TextIO | None, stop: Callable[[], bool]) -> str:
    """Block until the person answers or `stop()` turns true ("no")."""
    if stdin is None:
        return "no"
    try:
        fd = stdin.fileno()
    except (OSError, ValueError, AttributeError):
        return _read_line(stdin)
    try:
        import termios
        import tty

        saved = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError):  # not a terminal (or not POSIX): a line, as before
        return _read_line(stdin)
    try:
        tty.setcbreak(fd, termios.TCSANOW)  # one key at a time; Ctrl-C still raises SIGINT
        while not stop():
            ready, _, _ = select.select([fd], [], [], POLL_SECS)
            if not ready:
                continue
            try:
                data = os.read(fd, 32)
            except OSError:  # the terminal went away
                return "no"
            if not data:
                return "no"
            key = data.decode("utf-8", "replace")[:1]
            if key in ANSWERS:
                return ANSWERS[key]
        return "no"
    finally:
        try:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        except (OSError, termios.error):
            pass


def _read_line(stdin: TextIO) -> str:
    try:
        line = stdin.readline()
    except (OSError, ValueError):
        return "no"
    return ANSWERS.get(line.strip()[:1], "no")


PLAIN_PROMPT = (
    "\nmermaid wants to run {prompt}\n  ({reason})\n"
    "  1) yes   2) yes, don't ask again this session   3) no  [Esc = no]: "
)


class LineApprover:
    """The plain prompt (`--plain` at a terminal), as `policy.gate.tty_approver` asks it, but a
    terminal that is gone (SIGHUP, EIO) answers no instead of failing the run."""

    def __init__(
        self, stdin: TextIO | None, write: Callable[[str], None], hung_up: Callable[[], bool]
    ) -> None:
        self.stdin = stdin
        self.write = write
        self.hung_up = hung_up

    async def __call__(self, tool: str, prompt: str, reason: str) -> str:
        import asyncio

        if self.hung_up() or self.stdin is None:
            return "no"
        self.write(PLAIN_PROMPT.format(prompt=prompt, reason=reason))
        stdin = self.stdin
        return await asyncio.get_running_loop().run_in_executor(None, _read_line, stdin)
