"""List prices per model and the cost of a turn's usage.

Prices live in `mermaid_cli/providers/data/prices.json` (USD per million tokens), keyed by model id;
`[pricing."provider/model"]` overrides them. A dated snapshot (`claude-sonnet-4-5-20250929`,
`gpt-4o-2024-08-06`) costs what its alias costs. Local Ollama models cost nothing. Anything else
is unknown (None): the run reports `cost_usd: null` rather than a guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from mermaid_cli.core.types import Usage

_DATE_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")
_FREE_PROVIDERS = ("ollama",)


class Price(BaseModel):
    model_config = ConfigDict(frozen=True)

    input: float
    output: float
    cache_read: float
    cache_write: float


@cache
def _table() -> dict[str, Price]:
    raw = json.loads((Path(__file__).parent / "data" / "prices.json").read_text(encoding="utf-8"))
    return {k: Price(**v) for k, v in raw.items() if not k.startswith("_")}


def _from_override(value: Any) -> Price:
    data = value.model_dump() if hasattr(value, "model_dump") else dict(value)
    return Price(
        input=data["input"],
        output=data["output"],
        cache_read=data["input"] if data.get("cache_read") is None else data["cache_read"],
        cache_write=data["input"] if data.get("cache_write") is None else data["cache_write"],
    )


def price_for(model_id: str, overrides: Mapping[str, Any] | None = None) -> Price | None:
    """The price of `provider/model`, `[pricing]` overrides first; None when unknown."""
    candidates = [model_id]
    undated = _DATE_SUFFIX.sub("", model_id)
    if undated != model_id:
        candidates.append(undated)
    for key in candidates:
        if overrides and key in overrides:
            return _from_override(overrides[key])
    provider = model_id.split("/", 1)[0]
    if provider in _FREE_PROVIDERS:
        return Price(input=0.0, output=0.0, cache_read=0.0, cache_write=0.0)
    table = _table()
    for key in candidates:
        if key in table:
            return table[key]
    return None


def cost_usd(usage: Usage, price: Price | None) -> float | None:
    if price is None:
        return None
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_input_tokens * price.cache_read
        + usage.cache_creation_input_tokens * price.cache_write
    )
    return round(total / 1_000_000, 8)
