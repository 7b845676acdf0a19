"""The replay provider: serves a recording's turns back in order (`--model replay/FILE`)."""

from __future__ import annotations

from pathlib import Path

from mermaid_cli.core.errors import ProviderError
from mermaid_cli.core.types import ModelTurn, ReasoningBlock, TextBlock, TurnRequest
from mermaid_cli.providers.base import TurnSink
from mermaid_cli.store.recordings import load_turns


class ReplayProvider:
    def __init__(self, path: Path, model_id: str) -> None:
        self.path = path
        self.model_id = model_id
        self.header, self.turns = load_turns(path)
        self.served = 0

    @property
    def recorded_model(self) -> str | None:
        return self.header.get("model")

    async def turn(self, request: TurnRequest, sink: TurnSink) -> ModelTurn:
        if self.served >= len(self.turns):
            raise ProviderError(
                f"replay: the run asked for model turn {self.served + 1} but {self.path} recorded only "
                f"{len(self.turns)}; re-record the run or extend the file",
                code="replay_exhausted",
            )
        turn = self.turns[self.served]
        self.served += 1
        for block in turn.content:
            if isinstance(block, ReasoningBlock) and block.text:
                sink.reasoning(block.text)
            elif isinstance(block, TextBlock) and block.text:
                sink.text(block.text)
        return turn

    async def aclose(self) -> None:
        pass
