"""`[mcp_servers.NAME]` config: one MCP server each, stdio (`command`) or Streamable HTTP (`url`).

The lead mounts `mcp_servers: dict[str, McpServerSettings]` and `mcp_defer_tools: bool = True` on the
top-level Settings. Project config may not define servers (DESIGN.md §5); that rule lives in the
layering code, not here."""

import ipaddress
from urllib.parse import urlparse

from pydantic import Field, model_validator

from mermaid_cli.config.sections.base import Section
from mermaid_cli.core.defaults import empty_list


class McpOAuthSettings(Section):
    """`[mcp_servers.NAME.oauth]`: how to sign in to a remote server."""

    client_id: str | None = Field(
        default=None, description="Pre-registered OAuth client id (else dynamic registration)."
    )
    client_secret_env: str | None = Field(
        default=None, description="Env var holding the client secret, if any."
    )
    callback_port: int | None = Field(
        default=None, ge=1, le=65535, description="Local port of the sign-in redirect (default: a free port)."
    )
    scopes: list[str] = Field(
        default_factory=empty_list, description="Scopes to request (default: what the server asks)."
    )
    client_metadata_url: str | None = Field(
        default=None,
        description=(
            "Client ID Metadata Document URL used as the client id where the server supports it "
            '(default: Mermaid\'s; "" turns it off).'
        ),
    )

    @model_validator(mode="after")
    def _check_metadata_url(self) -> "McpOAuthSettings":
        url = self.client_metadata_url
        if url:
            parsed = urlparse(url)
            # draft-ietf-oauth-client-id-metadata-document §3: https, with a path
            if parsed.scheme != "https" or not parsed.hostname or parsed.path in ("", "/"):
                raise ValueError(f"client_metadata_url must be an https URL with a path: {url!r}")
        return self


class McpServerSettings(Section):
    command: str | None = Field(default=None, description="Executable of a stdio server.")
    args: list[str] = Field(default_factory=empty_list, description="Arguments of the stdio server.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment of the stdio server.")
    cwd: str | None = Field(default=None, description="Working directory of the stdio server.")
    url: str | None = Field(
        default=None, description="Streamable HTTP endpoint (https, or http to loopback)."
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description="Literal HTTP headers sent to the server."
    )
    env_headers: dict[str, str] = Field(
        default_factory=dict, description="Header name -> env var name, read at request time."
    )
    enabled_tools: list[str] = Field(
        default_factory=empty_list, description="Raw tool names to expose (empty: all)."
    )
    disabled_tools: list[str] = Field(default_factory=empty_list, description="Raw tool names to hide (wins).")
    defer: bool | None = Field(
        default=None, description="Defer this server's tools (default: mcp_defer_tools)."
    )
    eager_load_tools: list[str] = Field(
        default_factory=empty_list, description="Raw tool names offered from the first turn even when deferred."
    )
    startup_timeout_secs: float = Field(default=30, gt=0, description="Seconds the server may take to start.")
    enabled: bool = Field(default=True, description="Start this server.")
    oauth: McpOAuthSettings | None = Field(default=None, description="Remote sign-in settings.")

    @model_validator(mode="after")
    def _one_transport(self) -> "McpServerSettings":
        if (self.command is None) == (self.url is None):
            raise ValueError("set exactly one of `command` (stdio) or `url` (Streamable HTTP)")
        if self.url is not None:
            check_url(self.url)
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def tool_allowed(self, raw_name: str) -> bool:
        if raw_name in self.disabled_tools:
            return False
        return not self.enabled_tools or raw_name in self.enabled_tools

    def sends_own_authorization(self) -> bool:
        """A configured `Authorization` header turns OAuth off."""
        names = {k.lower() for k in self.headers} | {k.lower() for k in self.env_headers}
        return "authorization" in names


def check_url(url: str) -> None:
    """https anywhere; plain http only to a loopback host."""
    parsed = urlparse(url)
    if parsed.scheme == "https" and parsed.hostname:
        return
    if parsed.scheme != "http" or not parsed.hostname:
        raise ValueError(f"url must be https (or http to loopback): {url!r}")
    host = parsed.hostname
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise ValueError(f"plain http is only allowed to loopback hosts: {url!r}")
