"""A heartbeat on stderr while the model works: a CI log that shows nothing for two minutes looks
like a hang, so while a model call is in flight Mermaid says so, at most every `interval`
seconds (`MERMAID_HEARTBEAT_SECS`, default 10; `-q` turns it off). This is the plain form of the
terminal view's live status line: under the view (`Output.heartbeat`) nothing is printed, the
status line already counts the seconds."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from mermaid_cli.core.protocols import TurnSink
from mermaid_cli.core.types import ModelTurn, TurnRequest

DEFAULT_INTERVAL_SECS = 10.0


class HeartbeatProvider:
    """Wraps the run's provider; everything but `turn` passes through unchanged."""

    def __init__(
        self,
        provider: Any,
        note: Callable[[str], None],
        *,
        interval: float = DEFAULT_INTERVAL_SECS,
        monotonic: Callable[[], float] = time.monotonic,  # the wall clock, not the run's injected one
    ) -> None:
        self._provider = provider
        self._note = note
        self._interval = interval
        self._monotonic = monotonic

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)

    async def turn(self, request: TurnRequest, sink: TurnSink) -> ModelTurn:
        call = asyncio.ensure_future(self._provider.turn(request, sink))
        started = self._monotonic()
        try:
            while True:
                done, _ = await asyncio.wait({call}, timeout=self._interval)
                if done:
                    return call.result()
                waited = int(self._monotonic() - started)
                self._note(f"waiting for {self._provider.model_id} {waited} s")
        finally:
            if not call.done():  # cancelled while waiting: the model call goes with us
                call.cancel()
                with contextlib.suppress(BaseException):
                    await call


def interval_from(env: Any) -> float:
    """The heartbeat interval from `MERMAID_HEARTBEAT_SECS` (a positive number of seconds)."""
    try:
        value = float(env.get("MERMAID_HEARTBEAT_SECS", DEFAULT_INTERVAL_SECS))
    except (TypeError, ValueError):
        return DEFAULT_INTERVAL_SECS
    return value if value > 0 else DEFAULT_INTERVAL_SECS
