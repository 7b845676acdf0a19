"""`gather_all`: run awaitables concurrently and let none outlive the call.

`asyncio.gather` ends as soon as one of its children is cancelled, while the others are still
stopping: a SIGTERM during two tool calls then ended the run, and its `result` line, before the
slower call had stopped (its `tool_finished` came after `result`, its processes were killed even
later, by the event loop's shutdown). `asyncio.TaskGroup` waits, but wraps errors in groups.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Collection
from typing import TypeVar

T = TypeVar("T")


async def gather_all(*awaitables: Awaitable[T]) -> list[T]:
    """The results in order, once every awaitable has finished.

    When the caller is cancelled, every awaitable is cancelled and waited for before the
    cancellation goes on (a second cancellation stops the waiting, not the stopping). When one
    raises, the others are cancelled and waited for the same way, then its error is raised.
    """
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except asyncio.CancelledError:
        await _stop(tasks)
        raise
    failed = next((t for t in tasks if t.done() and not t.cancelled() and t.exception() is not None), None)
    if failed is not None:
        await _stop([t for t in tasks if not t.done()])
        error = failed.exception()
        assert error is not None  # (chosen for it)
        raise error
    return [task.result() for task in tasks]


async def _stop(tasks: Collection[asyncio.Future[T]]) -> None:
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks)
