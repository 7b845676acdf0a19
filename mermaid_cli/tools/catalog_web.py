"""Which web tools a run offers, and why the others are absent (for `mermaid doctor` and for a
model that calls an absent tool)."""

from __future__ import annotations

from collections.abc import Mapping

from mermaid_cli.integrations.web.trust import call_in_allowed_domains, call_uses_network, web_settings_of
from mermaid_cli.tools.base import Tool
from mermaid_cli.tools.web_fetch import WebFetch

__all__ = [
    "web_tools",
    "omitted_web_tools",
    "web_search_status",
    "call_uses_network",
    "call_in_allowed_domains",
]
from mermaid_cli.config.loader import Settings
from mermaid_cli.integrations.web.search_backends import select_backend
from mermaid_cli.tools.web_search import WebSearch

NO_NETWORK = "web tools are disabled for this run (network access is denied, e.g. --no-network)"


def web_tools(settings: Settings, env: Mapping[str, str], *, network_allowed: bool = True) -> list[Tool]:
    """The viable web tools. `settings` is the top-level Settings (its `.web` is used) or a
    WebSettings; `env` is where BRAVE_API_KEY / TAVILY_API_KEY are looked up."""
    if not network_allowed:
        return []
    web = web_settings_of(settings)
    tools: list[Tool] = [WebFetch(web)]
    choice = select_backend(web, env)
    if choice.backend is not None:
        tools.append(WebSearch(choice.backend))
    return tools


def omitted_web_tools(
    settings: Settings, env: Mapping[str, str], *, network_allowed: bool = True
) -> dict[str, str]:
    """name → model-facing reason and remedy, for each web tool `web_tools` did not offer."""
    if not network_allowed:
        return {"web_fetch": NO_NETWORK, "web_search": NO_NETWORK}
    choice = select_backend(web_settings_of(settings), env)
    return {} if choice.viable else {"web_search": f"web_search is not available: {choice.reason}"}


def web_search_status(settings: Settings, env: Mapping[str, str], *, network_allowed: bool = True) -> str:
    """One paragraph for `mermaid doctor`: the web_search backend in use, or how to enable one."""
    if not network_allowed:
        return NO_NETWORK
    choice = select_backend(web_settings_of(settings), env)
    if choice.viable:
        return f"web_search: {choice.reason}"
    return f"web_search is not available: {choice.reason}"
