"""Calls made with `background: true` (`tools.call_options`): each runs as its own task after the
gate allowed it; the model gets a task id at once and the result later, as a message of its own.
The loop delivers finished results with the next message it sends, waits for pending ones before
letting the run end, and any still running when the run stops anyway (a limit, a signal) are
cancelled with a `tool_finished` that says so."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any

from mermaid_cli.core import events as ev
from mermaid_cli.core.types import TextBlock, ToolCallBlock, ToolResult, ToolResultBlock

MAX_PENDING = 16


class BackgroundCalls:
    def __init__(self, emit: Callable[[ev._Event], None]) -> None:
        self.emit = emit
        self.seq = 0
        self._pending: dict[str, tuple[asyncio.Task[ToolResultBlock], ToolCallBlock, str]] = {}
        self._finished: list[TextBlock] = []

    def start(
        self, call: ToolCallBlock, call_id: str, work: Callable[[str], Coroutine[Any, Any, ToolResultBlock]]
    ) -> ToolResult:
        """Start `work(background call id)`; the immediate result the model gets."""
        if len(self._pending) >= MAX_PENDING:
            return ToolResult.error(
                f"{len(self._pending)} background calls are already running (at most {MAX_PENDING}); "
                "wait for one to finish or call without background"
            )
        self.seq += 1
        task_id = f"task-{self.seq}"
        bg_id = f"{call_id}/{task_id}"
        self.emit(ev.ToolStarted(call_id=bg_id, name=call.name, arguments=None))
        task = asyncio.create_task(work(bg_id), name=f"background {task_id}")
        self._pending[task_id] = (task, call, bg_id)
        task.add_done_callback(partial(self._done, task_id))
        message = (
            f"Started {call.name} in the background as {task_id}. Its result arrives as a message of its "
            "own when it finishes; go on with other work meanwhile. The run waits for it before ending."
        )
        return ToolResult(content=message, summary=f"started {task_id} in the background")

    def _done(self, task_id: str, task: asyncio.Task[ToolResultBlock]) -> None:
        entry = self._pending.pop(task_id, None)
        if entry is None or task.cancelled():
            return
        call = entry[1]
        exc = task.exception()
        if exc is not None:
            text = f"{call.name} failed: {type(exc).__name__}: {exc}"
            failed = True
        else:
            block = task.result()
            text, failed = block.content, block.is_error
        state = "failed" if failed else "finished"
        self._finished.append(
            TextBlock(text=f"[background {task_id}: {call.name} (call {call.id}) {state}]\n{text}")
        )

    def pending(self) -> bool:
        return bool(self._pending)

    def take_finished(self) -> list[TextBlock]:
        """The results that arrived since the last call, for the next message to the model."""
        out, self._finished = self._finished, []
        return out

    async def wait_any(self) -> None:
        """Until at least one pending call has finished (its result is then in `take_finished`)."""
        if self._finished or not self._pending:
            return
        tasks = [task for task, _call, _id in self._pending.values()]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        await asyncio.sleep(0)  # let the done callbacks file the results

    async def cancel_all(self) -> None:
        """Cancel what is still running (the run is ending), each with a clear `tool_finished`."""
        pending, self._pending = self._pending, {}
        for task_id, (task, call, bg_id) in pending.items():
            task.cancel()
            self.emit(
                ev.ToolFinished(
                    call_id=bg_id,
                    name=call.name,
                    status="cancelled",
                    summary=f"background {task_id} cancelled: the run ended before it finished",
                    duration_ms=0,
                )
            )
        if pending:
            await asyncio.gather(*(t for t, _c, _i in pending.values()), return_exceptions=True)
