"""The minimal structural protocols lower layers use to talk to a model without importing
`providers` (which sits above them in the import layers). `providers.base.Provider` satisfies
`ModelTurnProvider`; a layer that needs more of a provider names a wider protocol here.
"""

from __future__ import annotations

from typing import Protocol

from mermaid_cli.core.types import ModelTurn, TurnRequest


class TurnSink(Protocol):
    """Where a provider streams a turn's deltas and reports its retries."""

    def text(self, delta: str) -> None: ...

    def reasoning(self, delta: str) -> None: ...

    def retry(self, message: str, code: str | None = None) -> None: ...


class NullSink:
    """A `TurnSink` that drops everything (a side call nobody watches, such as the reviewer's)."""

    def text(self, delta: str) -> None:
        pass

    def reasoning(self, delta: str) -> None:
        pass

    def retry(self, message: str, code: str | None = None) -> None:
        pass


class ModelTurnProvider(Protocol):
    """One model turn: the part of `providers.base.Provider` the policy reviewer needs."""

    async def turn(self, request: TurnRequest, sink: TurnSink) -> ModelTurn: ...
