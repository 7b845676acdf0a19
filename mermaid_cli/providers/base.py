"""The Provider protocol every model client implements.

A provider turns a `TurnRequest` into a `ModelTurn`, streaming text and reasoning deltas to a
`TurnSink` as they arrive. Retries happen inside the provider; each retry is reported with
`sink.retry(...)` (the loop turns it into an `error` event with `retryable: true`). Failures that
end the run raise `ProviderError` (exit 5); `ContextTooLong` when the prompt does not fit.
"""

from __future__ import annotations

from typing import Protocol

from mermaid_cli.core.protocols import NullSink, TurnSink
from mermaid_cli.core.types import ModelTurn, TurnRequest

__all__ = ["NullSink", "Provider", "TurnSink"]


class Provider(Protocol):
    #: the resolved model id, `provider/model`
    model_id: str

    async def turn(self, request: TurnRequest, sink: TurnSink) -> ModelTurn: ...

    async def aclose(self) -> None: ...
