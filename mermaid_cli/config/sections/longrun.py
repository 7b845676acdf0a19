"""Config sections for long runs: `[compaction]` and `[memory]`."""

from pydantic import Field

from mermaid_cli.config.sections.base import Section


class CompactionSection(Section):
    auto_enabled: bool = Field(
        default=True, description="Compact automatically when the context passes auto_threshold_percent."
    )
    auto_threshold_percent: int = Field(
        default=85, ge=1, le=100, description="Share of the model's context window that triggers compaction."
    )
    tail_turns: int = Field(
        default=2, ge=0, description="Most recent model rounds kept word for word after a compaction."
    )
    max_truncation_recoveries: int = Field(
        default=3, ge=0, description="Compact-and-retry attempts in a row after a context-too-long error."
    )
    context_window: int | None = Field(
        default=None, ge=1000, description="The model's context window in tokens (default: known per model)."
    )
    provider_native: bool = Field(
        default=False,
        description=(
            "Let the provider compact server-side at the same threshold where the model supports it "
            "(Anthropic compaction, OpenAI Responses context_management); otherwise Mermaid's own."
        ),
    )


class MemorySection(Section):
    enabled: bool = Field(
        default=True, description="Offer the memory tool and put the memory index in the prompt."
    )
    index_cap_bytes: int = Field(
        default=8000, ge=0, le=100_000, description="Size cap of the memory index in the system prompt."
    )
