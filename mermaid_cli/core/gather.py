"""`gather_all`: run awaitables concurrently and let none outlive the call.

`asyncio.gather` ends as soon as one of its children is cancelled, while the others are still
stopping: a SIGTERM during two tool calls then ended the run, and its `result` line, before the
slower call had stopped (its `tool_finished` came after `result`, its processes were killed even
later, by the event loop's shutdown). `asyncio.TaskGroup` waits, but wraps errors in groups.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def gather_all(*awaitables: Awaitable[T]) -> list[T]:
    """The results in order, once every awaitable has finished. When the caller is cancelled,
    every one is cancelled and waited for before the cancellation goes on (a second
    cancellation stops the waiting, not the stopping); the first error is raised after all end."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks)
    except asyncio.CancelledError:
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        raise
    return [task.result() for task in tasks]
