"""SIGINT and SIGTERM while a run cannot yet handle them: noted, then honoured by the run.

DESIGN §2: `result` is the last line on every path past flag parsing, SIGINT and SIGTERM
included. Until the run's event loop has its own handlers (~0.1 s of imports and set-up), the
default actions ended the process mid-import: SIGTERM with no output at all, SIGINT with a
`KeyboardInterrupt` traceback, and neither with a `result` line. `hold()` makes such a signal
wait: the first one is noted, and the run, once its handlers are in place, takes it (`take()`) and
stops before any work, as if it had arrived then (exit 130/143, `result` status `interrupted`).
After the run has written its `result`, `hold()` again keeps a late signal from changing the exit
code that `result` reports.

Only a real `mermaid` process holds signals (never an in-process caller): from the start of an
`exec` (`cli/entry.py`), and again where any route reaches the run (`cli/exec_run.py`). No
`threading` here: this runs before the early request (`providers/early.py`).
"""

from __future__ import annotations

import signal

HELD = (signal.SIGINT, signal.SIGTERM)
_first: int | None = None


def hold() -> None:
    """From now until the run's event loop replaces them, SIGINT and SIGTERM are only noted."""
    for signum in HELD:
        try:
            signal.signal(signum, _note)
        except ValueError:  # not the main thread, the only one that may set handlers
            return


def _note(signum: int, _frame: object) -> None:
    global _first
    if _first is None:
        _first = signum


def take() -> int | None:
    """The first signal noted since the last call, if any."""
    global _first
    signum, _first = _first, None
    return signum
