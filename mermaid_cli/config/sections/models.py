"""`[models."provider/model"]`: add a model the built-in table does not list, or correct a row.

Mounted on Settings as `models: dict[str, ModelSettings]`. Each field left out keeps the table's
value (or the safe default for an unknown model: no reasoning parameters, a 4096-token output cap).
Prices are set in `[pricing]`. Project files may not set it (like `[pricing]`, it changes limits).
"""

from typing import Literal

from pydantic import Field

from mermaid_cli.config.sections.base import Section


class ModelSettings(Section):
    context_window: int | None = Field(None, gt=0, description="Context window in tokens.")
    max_output: int | None = Field(None, gt=0, description="Most output tokens one response may have.")
    vision: bool | None = Field(None, description="Whether the model reads images.")
    thinking: Literal["none", "budget", "adaptive", "effort"] | None = Field(
        None,
        description="How reasoning is asked for: none, budget (Anthropic budget_tokens), "
        "adaptive (Anthropic adaptive + effort) or effort (OpenAI reasoning effort).",
    )
    efforts: list[Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]] | None = Field(
        None, description="Reasoning values the model accepts."
    )
    thinking_always_on: bool | None = Field(
        None, description="The model always thinks (thinking is never sent as disabled)."
    )
