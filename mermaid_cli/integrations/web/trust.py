"""What the policy gate needs to know about a web call: does it reach the network, and does it go
to a host the operator trusts (`[web] allowed_domains`)."""

from __future__ import annotations

from typing import Any

from mermaid_cli.config.loader import Settings
from mermaid_cli.config.sections.web import WebSettings


def web_settings_of(settings: Settings | WebSettings) -> WebSettings:
    """The `[web]` section from a Settings object, a WebSettings itself, or defaults."""
    if isinstance(settings, WebSettings):
        return settings
    web = getattr(settings, "web", None)
    return web if isinstance(web, WebSettings) else WebSettings()


def call_uses_network(name: str, arguments: dict[str, Any] | None) -> bool:
    """False for calls that only read a snapshot already in the run (no new egress)."""
    if name == "web_fetch" and arguments and arguments.get("snapshot_id") and not arguments.get("url"):
        return False
    return name in ("web_fetch", "web_search")


def call_in_allowed_domains(settings: Settings, name: str, arguments: dict[str, Any] | None) -> bool:
    """True when a web_fetch call targets a host in `[web] allowed_domains` (auto mode then skips
    the classifier). Redirects are still checked by netguard; web_search never qualifies."""
    from mermaid_cli.integrations.web.netguard import FetchRefused, check_url, host_allowed

    url = (arguments or {}).get("url")
    if name != "web_fetch" or not isinstance(url, str):
        return False
    try:
        host = check_url(url).host
    except FetchRefused:
        return False
    return host_allowed(host, web_settings_of(settings).allowed_domains)
