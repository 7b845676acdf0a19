"""`on_daemon_thread`: a blocking read awaited without holding up the event loop or the exit.

`asyncio.to_thread` runs on the loop's executor, whose threads the end of a run waits for: a read
that never returns (a stdin left open, a person who never pastes) would keep the process from
exiting. A daemon thread of its own is left behind instead, and the process exits without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def on_daemon_thread(read: Callable[[], T], name: str) -> T:
    """`read()`'s value (or its error), computed on a daemon thread named `name`. Cancelling the
    await abandons the thread, still blocked."""
    loop = asyncio.get_running_loop()
    arrived: asyncio.Future[T] = loop.create_future()

    def deliver(value: T | None, error: BaseException | None) -> None:
        if arrived.done():  # the awaiting side has gone (cancelled, timed out)
            return
        if error is not None:
            arrived.set_exception(error)
        else:
            arrived.set_result(value)  # type: ignore[arg-type]  # (None only with an error)

    def work() -> None:
        value: T | None = None
        error: BaseException | None = None
        try:
            value = read()
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(deliver, value, error)

    threading.Thread(target=work, name=name, daemon=True).start()
    return await arrived
