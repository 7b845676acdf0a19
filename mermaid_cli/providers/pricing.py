"""The price of a model and the cost of a turn's usage.

Prices are part of the model table (`providers/models.py`, `data/models.json`): USD per million
tokens, with a long-context band where one is published; `[pricing."provider/model"]` overrides
them. Local Ollama models cost nothing. Anything else is unknown (None): the run reports
`cost_usd: null` rather than a guess.
"""

from __future__ import annotations

from collections.abc import Mapping

from mermaid_cli.config.sections.providers import PriceSettings
from mermaid_cli.core.types import Usage
from mermaid_cli.providers.models import LongContextPrice, ModelFacts, Price, facts_for

__all__ = ["LongContextPrice", "Price", "cost_usd", "price_for", "turn_cost"]


def price_for(
    model_id: str, overrides: Mapping[str, PriceSettings] | Mapping[str, Mapping[str, float]] | None = None
) -> Price | None:
    """The price of `provider/model`, `[pricing]` overrides first; None when unknown."""
    return facts_for(model_id, pricing=overrides).price


def cost_usd(usage: Usage, price: Price | None, long_context: LongContextPrice | None = None) -> float | None:
    """The cost of one request; a request whose whole input is above the band costs the band price."""
    if price is None:
        return None
    prompt = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    if long_context is not None and prompt > long_context.above_input_tokens:
        price = long_context
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_input_tokens * price.cache_read
        + usage.cache_creation_input_tokens * price.cache_write
    )
    return round(total / 1_000_000, 8)


def turn_cost(facts: ModelFacts, usage: Usage) -> float | None:
    return cost_usd(usage, facts.price, facts.long_context)
