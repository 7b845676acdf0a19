"""`[web]`: web_fetch safety and budgets, web_search backend selection."""

from typing import Literal

from pydantic import Field, field_validator

from mermaid_cli.config.sections.base import Section
from mermaid_cli.core.defaults import empty_list

MIB = 1024 * 1024


class WebSettings(Section):
    search_backend: Literal["auto", "searxng", "brave", "tavily"] = Field(
        "auto", description="web_search backend; auto = first configured of searxng, brave, tavily."
    )
    searxng_url: str | None = Field(
        None, description="Base URL of your SearXNG instance (json must be in search.formats)."
    )
    brave_base_url: str = Field(
        "https://api.search.brave.com/res/v1/web/search", description="Brave web search endpoint."
    )
    tavily_base_url: str = Field("https://api.tavily.com/search", description="Tavily search endpoint.")
    allowed_domains: list[str] = Field(
        default_factory=empty_list, description="Hosts (and their subdomains) fetched without classification."
    )
    allow_private_network: bool = Field(
        False, description="Let web_fetch reach loopback, private and link-local addresses."
    )
    connect_timeout_secs: float = Field(10.0, gt=0, description="Connect timeout per connection.")
    timeout_secs: float = Field(30.0, gt=0, description="Total time for one fetch or one search query.")
    max_response_bytes: int = Field(16 * MIB, ge=1024, description="Decoded body budget per response.")
    max_redirects: int = Field(5, ge=0, le=20, description="Redirects followed per fetch.")
    max_output_bytes: int = Field(30_000, ge=2_000, le=200_000, description="Cap of one tool result.")

    @field_validator("searxng_url", "brave_base_url", "tavily_base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value
