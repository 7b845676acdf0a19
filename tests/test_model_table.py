"""The model table: well formed, and every request body each provider builds for every row obeys
the row's published constraints (output limit, thinking mode, accepted reasoning values)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from provider_fixtures import validate_anthropic_request, validate_chat_request, validate_responses_request

from mermaid_cli.config.loader import Settings
from mermaid_cli.config.sections.models import ModelSettings
from mermaid_cli.config.sections.providers import PriceSettings
from mermaid_cli.core.types import Message, TurnRequest, Usage
from mermaid_cli.providers.anthropic import AnthropicProvider
from mermaid_cli.providers.http import Endpoint
from mermaid_cli.providers.models import EFFORT_ORDER, UNKNOWN_MAX_OUTPUT, ModelFacts, facts_for, table
from mermaid_cli.providers.openai_chat import OpenAIChatProvider
from mermaid_cli.providers.openai_responses import OpenAIResponsesProvider
from mermaid_cli.providers.pricing import cost_usd, turn_cost
from mermaid_cli.providers.resolve import resolve_model

LEVELS = (None, "none", "low", "medium", "high")
CAPS = (None, 1_000, 10_000_000)
ROWS = [(row, model_id) for row in table() for model_id in row.ids]


def _request(reasoning: str | None, cap: int | None) -> TurnRequest:
    return TurnRequest(
        system="s", messages=(Message.user_text("hi"),), reasoning=reasoning, max_output_tokens=cap
    )


def _endpoint(model_id: str, base: str) -> Endpoint:
    provider, model = model_id.split("/", 1)
    return Endpoint(provider=provider, model=model, base_url=base, api_key="k")


def test_every_row_is_sourced_dated_and_consistent() -> None:
    seen: set[str] = set()
    for row in table():
        assert row.source and dt.date.fromisoformat(row.checked), row.family
        assert row.price is not None and row.max_output <= row.context_window, row.family
        assert set(row.thinking.efforts) <= set(EFFORT_ORDER), row.family
        assert (row.thinking.mode == "none") == (not row.thinking.efforts), row.family
        for model_id in row.ids:
            assert model_id not in seen, model_id
            seen.add(model_id)
            vendor = model_id.split("/", 1)[0]
            assert vendor in ("anthropic", "openai"), model_id
            # Anthropic thinks by budget or adaptively; OpenAI by reasoning effort
            allowed = ("none", "budget", "adaptive") if vendor == "anthropic" else ("none", "effort")
            assert row.thinking.mode in allowed, model_id
    raw = json.loads(
        (Path(__file__).resolve().parents[1] / "mermaid_cli/providers/data/models.json").read_text()
    )
    assert len(raw["models"]) == len(table()) >= 30


def _check_anthropic(row: ModelFacts, body: dict, level: str | None, cap: int | None) -> None:
    assert 1 <= body["max_tokens"] <= row.max_output
    if cap is not None:
        assert body["max_tokens"] <= max(cap, body.get("thinking", {}).get("budget_tokens", 0) + 8_192)
    thinking = body.get("thinking")
    mode = row.thinking.mode
    if thinking is None:
        assert "output_config" not in body
        return
    if thinking["type"] == "disabled":
        assert level == "none" and mode == "adaptive" and not row.thinking.always_on
    elif thinking["type"] == "adaptive":
        assert mode == "adaptive" and body["output_config"]["effort"] in row.thinking.efforts
    else:
        assert thinking["type"] == "enabled" and mode == "budget"
        assert 1_024 <= thinking["budget_tokens"] < body["max_tokens"]
    assert level is not None


def _check_openai(row: ModelFacts, body: dict, key: str, effort: str | None) -> None:
    if row.thinking.mode == "none":
        assert effort is None and "include" not in body
    else:
        assert effort is None or effort in row.thinking.efforts
    if key in body:
        assert body[key] <= row.max_output


@pytest.mark.parametrize(("row", "model_id"), ROWS, ids=[m for _, m in ROWS])
def test_every_request_body_obeys_its_row(row: ModelFacts, model_id: str) -> None:
    for level in LEVELS:
        for cap in CAPS:
            req = _request(level, cap)
            if model_id.startswith("anthropic/"):
                body = AnthropicProvider(_endpoint(model_id, "https://api.anthropic.com")).build_body(req)
                validate_anthropic_request(body)
                _check_anthropic(row, body, level, cap)
                continue
            responses = OpenAIResponsesProvider(_endpoint(model_id, "https://api.openai.com/v1"))
            body = responses.build_body(req)
            validate_responses_request(body)
            _check_openai(row, body, "max_output_tokens", (body.get("reasoning") or {}).get("effort"))
            chat = OpenAIChatProvider(_endpoint(model_id, "https://api.openai.com/v1")).build_body(req)
            validate_chat_request(chat)
            _check_openai(row, chat, "max_completion_tokens", chat.get("reasoning_effort"))
            if level is None:
                assert "reasoning" not in body and "reasoning_effort" not in chat


def test_family_specific_reasoning_values() -> None:
    def effort(model: str, level: str) -> str | None:
        body = OpenAIResponsesProvider(_endpoint(model, "https://api.openai.com/v1")).build_body(
            _request(level, None)
        )
        return (body.get("reasoning") or {}).get("effort")

    assert [effort("openai/gpt-5-codex", lv) for lv in ("none", "low", "high")] == [None, "low", "high"]
    assert [effort("openai/gpt-5-pro", lv) for lv in ("none", "low", "medium")] == [None, "high", "high"]
    assert effort("openai/gpt-5-2025-08-07", "none") == "minimal"
    assert effort("openai/gpt-5.2", "none") == "none"
    assert effort("openai/gpt-4.1", "high") is None


def test_thinking_never_disabled_where_it_is_always_on_and_output_capped() -> None:
    always = AnthropicProvider(_endpoint("anthropic/claude-opus-5-5", "https://api.anthropic.com"))
    body = always.build_body(_request("none", None))
    assert "thinking" not in body and body["max_tokens"] == 32_000
    # Sonnet 5.5 and the Fable models answer `thinking: {type: disabled}` with a 400
    for model_id in (
        "anthropic/claude-sonnet-5-5",
        "anthropic/claude-fable-5-2",
        "anthropic/claude-fable-5-1",
    ):
        provider = AnthropicProvider(_endpoint(model_id, "https://api.anthropic.com"))
        assert "thinking" not in provider.build_body(_request("none", None)), model_id
    can_stop = AnthropicProvider(_endpoint("anthropic/claude-opus-4-6", "https://api.anthropic.com"))
    assert can_stop.build_body(_request("none", None))["thinking"] == {"type": "disabled"}
    old = AnthropicProvider(_endpoint("anthropic/claude-3-5-haiku-20241022", "https://api.anthropic.com"))
    capped = old.build_body(_request("high", 50_000))
    assert capped["max_tokens"] == 8_192 and "thinking" not in capped
    opus41 = AnthropicProvider(_endpoint("anthropic/claude-opus-4-1", "https://api.anthropic.com"))
    high = opus41.build_body(_request("high", None))
    assert high["max_tokens"] == 32_000 and high["thinking"]["budget_tokens"] < 32_000


def test_an_unknown_model_gets_safe_defaults_and_a_warning() -> None:
    unknown = AnthropicProvider(_endpoint("anthropic/claude-future-9", "https://api.anthropic.com"))
    body = unknown.build_body(_request("high", None))
    assert body["max_tokens"] == UNKNOWN_MAX_OUTPUT and "thinking" not in body
    gpt = OpenAIResponsesProvider(_endpoint("openai/gpt-future", "https://api.openai.com/v1"))
    sent = gpt.build_body(_request("high", None))
    assert "reasoning" not in sent and "include" not in sent
    resolved = resolve_model(
        "anthropic/claude-future-9", Settings(), {"ANTHROPIC_API_KEY": "sk-test-123456"}, cwd=Path("/")
    )
    assert resolved.price is None and resolved.context_window == 128_000
    assert "claude-future-9" in resolved.warnings[0] and "[models." in resolved.warnings[0]
    assert resolved.secrets == ("sk-test-123456",)


def test_models_and_pricing_config_add_a_row() -> None:
    settings = Settings(
        models={
            "openai/my-model": ModelSettings(
                context_window=64_000, max_output=2_000, thinking="effort", efforts=["low", "high"]
            )
        },
        pricing={"openai/my-model": PriceSettings(input=1, output=2)},
    )
    resolved = resolve_model("openai/my-model", settings, {"OPENAI_API_KEY": "sk-x-123456"}, cwd=Path("/"))
    assert resolved.warnings == () and resolved.context_window == 64_000 and resolved.max_output == 2_000
    assert resolved.cost(Usage(input_tokens=1_000_000)) == 1.0
    body = resolved.provider.build_body(_request("medium", 9_999))  # type: ignore[attr-defined]
    assert body["reasoning"]["effort"] == "high" and body["max_output_tokens"] == 2_000
    # an override of a listed model keeps the rest of its row
    tweaked = facts_for("openai/gpt-5", {"openai/gpt-5": ModelSettings(context_window=100_000)})
    assert tweaked.context_window == 100_000 and tweaked.thinking == facts_for("openai/gpt-5").thinking


def test_long_context_band_prices_the_whole_request() -> None:
    facts = facts_for("anthropic/claude-sonnet-4-5-20250929")
    short = Usage(input_tokens=200_000, output_tokens=1_000)
    long = Usage(input_tokens=150_000, cache_read_input_tokens=60_000, output_tokens=1_000)
    assert turn_cost(facts, short) == pytest.approx(0.6 + 0.015)
    assert turn_cost(facts, long) == pytest.approx(0.9 + 0.036 + 0.0225)
    assert cost_usd(long, facts.price) == pytest.approx(0.45 + 0.018 + 0.015)


def test_replay_resolves_relative_to_cwd_with_the_recorded_models_facts(tmp_path: Path) -> None:
    header = {"type": "header", "format": "mermaid-recording", "version": 1, "model": "openai/gpt-4.1"}
    (tmp_path / "r.jsonl").write_text(json.dumps(header) + "\n")
    resolved = resolve_model("replay/r.jsonl", Settings(), {}, cwd=tmp_path)
    assert resolved.model_id == "replay/r.jsonl" and resolved.recorded_model == "openai/gpt-4.1"
    assert resolved.context_window == 1_047_576 and resolved.price is not None and resolved.secrets == ()


def test_every_listed_id_resolves_to_its_own_row() -> None:
    """A run validates only its own model's row (providers.models._row): each id still finds
    the very row the whole table holds."""
    for row, model_id in ROWS:
        assert facts_for(model_id) is row, model_id
