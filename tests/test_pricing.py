"""Price table lookups and cost arithmetic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mermaid_cli.config.sections.providers import PriceSettings
from mermaid_cli.core.types import Usage
from mermaid_cli.providers.pricing import Price, cost_usd, price_for


def test_known_models_and_dated_snapshots() -> None:
    sonnet = price_for("anthropic/claude-sonnet-4-5")
    assert sonnet == Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    assert price_for("anthropic/claude-sonnet-4-5-20250929") == sonnet
    assert price_for("openai/gpt-4o-2024-08-06") == price_for("openai/gpt-4o")
    assert price_for("openai/gpt-4o-mini").input == 0.15
    for model in (
        "anthropic/claude-opus-4-5",
        "anthropic/claude-haiku-4-5",
        "openai/gpt-5",
        "openai/gpt-5-mini",
        "openai/gpt-4.1",
        "openai/o3",
        "openai/o4-mini",
    ):
        price = price_for(model)
        assert price is not None and price.output > price.input > price.cache_read, model


def test_unknown_models_have_no_price_and_local_ones_are_free() -> None:
    assert price_for("anthropic/claude-future-9") is None
    assert price_for("groq/llama-3.3-70b") is None
    assert price_for("openai/gpt-4o-mini-but-not-really") is None
    assert price_for("ollama/qwen3:8b") == Price(input=0, output=0, cache_read=0, cache_write=0)
    assert cost_usd(Usage(input_tokens=5), None) is None


def test_overrides_win_and_default_cache_prices_to_input() -> None:
    overrides = {
        "groq/llama-3.3-70b": PriceSettings(input=0.59, output=0.79),
        "openai/gpt-4o": {"input": 1, "output": 2, "cache_read": 0.1},
    }
    assert price_for("groq/llama-3.3-70b", overrides) == Price(
        input=0.59, output=0.79, cache_read=0.59, cache_write=0.59
    )
    assert price_for("openai/gpt-4o-2024-11-20", overrides) == Price(
        input=1, output=2, cache_read=0.1, cache_write=1
    )


def test_cost_adds_every_component() -> None:
    price = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    usage = Usage(
        input_tokens=1_000_000,
        output_tokens=100_000,
        cache_read_input_tokens=2_000_000,
        cache_creation_input_tokens=400_000,
    )
    assert cost_usd(usage, price) == pytest.approx(3.0 + 1.5 + 0.6 + 1.5)
    assert cost_usd(Usage(), price) == 0


def test_old_price_table_is_gone_and_every_listed_model_has_a_price() -> None:
    data_dir = Path(__file__).resolve().parents[1] / "mermaid_cli" / "providers" / "data"
    assert not (data_dir / "prices.json").exists()  # one definition: the model table
    rows = json.loads((data_dir / "models.json").read_text())["models"]
    for row in rows:
        for model_id in row["ids"]:
            assert price_for(model_id) == Price(**row["price"]), model_id
