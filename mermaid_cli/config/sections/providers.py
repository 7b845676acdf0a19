"""`[providers.NAME]`, `[pricing."provider/model"]` and the `[tools]` table (`provider_native`,
`computer`).

The lead mounts these on Settings as `providers: dict[str, ProviderSettings]`,
`pricing: dict[str, PriceSettings]` and the `provider_native` field on the `[tools]` section
(`ProviderToolsSettings` holds it with its default and description). Project config files may
not set `providers` (DESIGN.md §5): a project could otherwise send the user's key elsewhere.
"""

from typing import Literal

from pydantic import ConfigDict, Field, field_validator

from mermaid_cli.config.sections.base import Section


class ProviderSettings(Section):
    base_url: str | None = Field(
        None, description="API base URL (OpenAI-compatible ones end in /v1); https unless loopback."
    )
    api_key_env: str | None = Field(
        None, description="Env var holding the key; when set it is the only source (no keyring)."
    )
    api: Literal["chat", "responses", "anthropic"] | None = Field(
        None, description="Wire protocol: chat (Chat Completions), responses or anthropic."
    )
    extra_headers: dict[str, str] = Field(default_factory=dict, description="Headers added to every request.")
    default_model: str | None = Field(None, description="Model used when this provider is picked by default.")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value


#: USD per million tokens no model costs
MAX_PRICE = 1_000_000


class PriceSettings(Section):
    """USD per million tokens. Cache prices default to the input price when omitted."""

    # finite and at most MAX_PRICE: `inf` or `1e308` made a cost of NaN or Infinity (not JSON,
    # and no `--max-cost` comparison ever true)
    model_config = ConfigDict(allow_inf_nan=False)  # merged with Section's

    input: float = Field(ge=0, le=MAX_PRICE, description="USD per million uncached input tokens.")
    output: float = Field(ge=0, le=MAX_PRICE, description="USD per million output tokens.")
    cache_read: float | None = Field(
        None, ge=0, le=MAX_PRICE, description="USD per million cache-read input tokens."
    )
    cache_write: float | None = Field(
        None, ge=0, le=MAX_PRICE, description="USD per million cache-write input tokens."
    )


class ProviderToolsSettings(Section):
    provider_native: bool = Field(
        True, description="Offer vendor-native tools (Anthropic text editor/bash, OpenAI apply_patch)."
    )
    computer: bool = Field(
        False,
        description=(
            "Offer the `computer` tool (screenshots, mouse, keyboard of the X11 screen in DISPLAY). "
            "Every screenshot goes to the model's provider."
        ),
    )
