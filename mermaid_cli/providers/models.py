"""Model facts: one row per model family, from `providers/data/models.json` and `[models]`/`[pricing]`.

A row says what a family accepts (context window, output limit, vision, tool types, thinking mode
and its accepted values) and what it costs (with long-context bands). Every request parameter the
providers send is derived from it, so no client guesses a value the API rejects. An id matches a
row exactly or with a dated/`-latest` suffix (`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`).
An unknown model gets `UNKNOWN` facts: no reasoning parameters and a conservative output cap.
"""

import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mermaid_cli.config.sections.models import ModelSettings
from mermaid_cli.config.sections.providers import PriceSettings

_DATE_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")
#: the order of reasoning values from least to most; used to map a level a family does not take
EFFORT_ORDER = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
#: output cap for a model the table does not know: below every current model's limit
UNKNOWN_MAX_OUTPUT = 4_096
UNKNOWN_CONTEXT_WINDOW = 128_000
_FREE_PROVIDERS = ("ollama",)


class Price(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(frozen=True)

    input: float
    output: float
    cache_read: float
    cache_write: float


class LongContextPrice(Price):
    """Prices for a whole request whose input (cached included) is above `above_input_tokens`."""

    above_input_tokens: int


class Thinking(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["none", "budget", "adaptive", "effort"] = "none"
    efforts: tuple[str, ...] = ()
    #: the model always thinks: it must never be sent `thinking: {type: disabled}`
    always_on: bool = False


class ModelFacts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    family: str
    ids: tuple[str, ...] = ()
    source: str
    checked: str
    context_window: int = Field(gt=0)
    max_output: int = Field(gt=0)
    vision: bool = False
    #: Anthropic: the model takes `output_config.format` (structured outputs); OpenAI models
    #: always get `text.format`/`response_format`, dropped if the server refuses it
    structured_output: bool = False
    tools: tuple[str, ...] = ("function",)
    #: the API compacts the context server-side on request (Anthropic's `compact_20260112`
    #: context edit, OpenAI Responses' `context_management`): `[compaction] provider_native`
    compaction: bool = False
    thinking: Thinking = Thinking()
    price: Price | None = None
    long_context: LongContextPrice | None = None
    known: bool = True

    def output_cap(self, requested: int | None, default: int) -> int:
        """`requested` (or `default`) never above the model's output limit."""
        return min(requested or default, self.max_output)

    def effort(self, level: str | None) -> str | None:
        """The accepted reasoning value nearest to `level`; None when nothing should be sent.

        `none` maps to the lowest value only where the family has an off switch (`none` or
        `minimal`); elsewhere the parameter is left out and the model uses its default."""
        accepted = self.thinking.efforts
        if self.thinking.mode == "none" or not level or not accepted:
            return None
        if level in accepted:
            return level
        if level == "none":
            return "minimal" if "minimal" in accepted else None
        want = EFFORT_ORDER.index(level) if level in EFFORT_ORDER else EFFORT_ORDER.index("medium")
        ranked = sorted(accepted, key=lambda v: (abs(EFFORT_ORDER.index(v) - want), -EFFORT_ORDER.index(v)))
        return ranked[0]


UNKNOWN = ModelFacts(
    family="unknown",
    source="Mermaid's safe defaults for a model the table does not list",
    checked="",
    context_window=UNKNOWN_CONTEXT_WINDOW,
    max_output=UNKNOWN_MAX_OUTPUT,
    known=False,
)


@cache
def _rows() -> list[Any]:
    raw = json.loads((Path(__file__).parent / "data" / "models.json").read_text(encoding="utf-8"))
    rows: list[Any] = raw["models"]
    return rows


@cache
def _row(index: int) -> ModelFacts:
    return ModelFacts.model_validate(_rows()[index])


def table() -> tuple[ModelFacts, ...]:
    return tuple(_row(index) for index in range(len(_rows())))


@cache
def _by_id() -> dict[str, int]:
    """Each listed id's row, by its place: a run validates only the row of its model (all ~40
    took ~2 ms of every run's set-up, issue 23)."""
    return {model_id: index for index, row in enumerate(_rows()) for model_id in row.get("ids", ())}


def candidates(model_id: str) -> list[str]:
    """The id itself, then without a date or `-latest` suffix."""
    undated = _DATE_SUFFIX.sub("", model_id)
    return [model_id] if undated == model_id else [model_id, undated]


def _override(base: ModelFacts | None, model_id: str, user: ModelSettings) -> ModelFacts:
    data = (base or UNKNOWN).model_dump()
    data.update(family=data["family"] if base else model_id, known=True, ids=(model_id,))
    data["source"] = f"[models.{model_id!r}] in config" + (f" over {base.source}" if base else "")
    for key in ("context_window", "max_output", "vision"):
        value = getattr(user, key)
        if value is not None:
            data[key] = value
    if (user.thinking, user.efforts, user.thinking_always_on) != (None, None, None):
        thinking = dict(data["thinking"])
        if user.thinking is not None:
            thinking["mode"] = user.thinking
        if user.efforts is not None:
            thinking["efforts"] = tuple(user.efforts)
        if user.thinking_always_on is not None:
            thinking["always_on"] = user.thinking_always_on
        data["thinking"] = thinking
    return ModelFacts.model_validate(data)


def price_from_settings(value: PriceSettings | Mapping[str, float]) -> Price:
    """A `[pricing]` row as a Price: cache prices default to the input price."""
    if not isinstance(value, PriceSettings):
        value = PriceSettings.model_validate(value)
    return Price(
        input=value.input,
        output=value.output,
        cache_read=value.input if value.cache_read is None else value.cache_read,
        cache_write=value.input if value.cache_write is None else value.cache_write,
    )


def facts_for(
    model_id: str,
    models: Mapping[str, ModelSettings] | None = None,
    pricing: Mapping[str, PriceSettings] | Mapping[str, Mapping[str, float]] | None = None,
) -> ModelFacts:
    """The facts for `provider/model`: `[models]` over the table, `[pricing]` over its price."""
    keys = candidates(model_id)
    base = next((_row(_by_id()[k]) for k in keys if k in _by_id()), None)
    user = next((models[k] for k in keys if models and k in models), None)
    facts = _override(base, model_id, user) if user is not None else (base or UNKNOWN)
    price = next((pricing[k] for k in keys if pricing and k in pricing), None)
    if price is not None:
        # a [pricing] row replaces the listed price and its long-context bands
        facts = facts.model_copy(update={"price": price_from_settings(price), "long_context": None})
    elif facts.price is None and model_id.split("/", 1)[0] in _FREE_PROVIDERS:
        facts = facts.model_copy(update={"price": Price(input=0, output=0, cache_read=0, cache_write=0)})
    return facts
