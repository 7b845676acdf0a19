"""Where a remote MCP sign-in is kept: one OS-keyring entry per server (service `mermaid`, account
`mcp-oauth:NAME`), a JSON object holding the server URL the tokens were issued for (tokens for
another URL are ignored), the tokens, their expiry time, the client (registered or Client ID
Metadata Document), the authorization server metadata, and the scopes a `403 insufficient_scope`
asked for that the next `mermaid mcp login` must request (`step_up_scope`).

`KeyringTokenStorage` is the SDK's `TokenStorage` over that entry. `keyring` and `mcp` are imported
only inside functions."""

from __future__ import annotations

import json
import time
from typing import Any

from mermaid_cli.security.keys import SERVICE as KEYRING_SERVICE


def account(name: str) -> str:
    return f"mcp-oauth:{name}"


def keyring_available() -> bool:
    import os

    from mermaid_cli.security.keys import keyring_enabled

    return keyring_enabled(os.environ)


def load_entry(name: str) -> dict[str, Any] | None:
    import os

    from mermaid_cli.security.keys import keyring_get

    raw = keyring_get(account(name), os.environ)  # no keyring backend is "not signed in"
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def save_entry(name: str, entry: dict[str, Any]) -> None:
    if not keyring_available():
        raise RuntimeError("the keyring is disabled (MERMAID_NO_KEYRING=1); cannot store the sign-in")
    import keyring

    try:
        keyring.set_password(KEYRING_SERVICE, account(name), json.dumps(entry))
    except Exception as exc:  # noqa: BLE001 - say why without echoing the tokens
        raise RuntimeError(f"cannot store the sign-in in the OS keyring: {type(exc).__name__}") from None


def delete_entry(name: str) -> bool:
    """Forget the stored sign-in; True when there was one."""
    if load_entry(name) is None:
        return False
    try:
        import keyring

        keyring.delete_password(KEYRING_SERVICE, account(name))
    except Exception:  # noqa: BLE001
        return False
    return True


def entry_for(name: str, url: str) -> dict[str, Any] | None:
    """The stored sign-in of `name` when it was made for `url` (tokens for another URL are ignored)."""
    entry = load_entry(name)
    return entry if entry and entry.get("server_url") == url else None


def signed_in(name: str, url: str) -> bool:
    entry = entry_for(name, url)
    return bool(entry and entry.get("tokens"))


class KeyringTokenStorage:
    """The SDK's `TokenStorage`, bound to one server name and URL."""

    def __init__(self, name: str, url: str, configured_client: Any = None) -> None:
        self.name = name
        self.url = url
        self.configured_client = configured_client

    def _entry(self) -> dict[str, Any]:
        return entry_for(self.name, self.url) or {"server_url": self.url}

    def expires_at(self) -> float | None:
        value = self._entry().get("expires_at")
        return float(value) if isinstance(value, (int, float)) else None

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        tokens = self._entry().get("tokens")
        if not tokens:
            return None
        try:
            return OAuthToken.model_validate(tokens)
        except ValueError:
            return None

    async def set_tokens(self, tokens: Any) -> None:
        entry = self._entry()
        entry["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        entry["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in else None
        save_entry(self.name, entry)

    def metadata(self) -> Any:
        from mcp.shared.auth import OAuthMetadata

        raw = self._entry().get("oauth_metadata")
        if not raw:
            return None
        try:
            return OAuthMetadata.model_validate(raw)
        except ValueError:
            return None

    def set_metadata(self, metadata: Any) -> None:
        entry = self._entry()
        if not entry.get("tokens"):
            return
        entry["oauth_metadata"] = metadata.model_dump(mode="json", exclude_none=True)
        save_entry(self.name, entry)

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        if self.configured_client is not None:
            return self.configured_client
        info = self._entry().get("client_info")
        if not info:
            return None
        try:
            return OAuthClientInformationFull.model_validate(info)
        except ValueError:
            return None

    async def set_client_info(self, client_info: Any) -> None:
        if self.configured_client is not None:
            return  # a configured client (and its secret) stays in config/env, not the keyring
        entry = self._entry()
        entry["client_info"] = client_info.model_dump(mode="json", exclude_none=True)
        save_entry(self.name, entry)


def union_scopes(*scopes: str | None) -> str | None:
    """Space-separated scope strings merged in order, duplicates dropped (None when empty): the
    SDK's two-way SEP-2350 union folded over any number."""
    from mcp.client.auth.utils import union_scopes as union_two

    merged: str | None = None
    for scope in scopes:
        merged = union_two(merged, scope or None)
    return merged


def record_step_up(name: str, url: str, scope: str | None) -> str | None:
    """Remember the scopes a server asked for (403 insufficient_scope) on top of those granted, so
    the next interactive sign-in requests their union; returns that union. Nothing is stored when
    there is no sign-in for this URL (the run's message still names the scopes)."""
    entry = entry_for(name, url)
    if entry is None:
        return union_scopes(scope)
    tokens = entry.get("tokens") or {}
    granted = tokens.get("scope") if isinstance(tokens, dict) else None
    wanted = union_scopes(entry.get("step_up_scope"), granted, scope)
    if wanted != entry.get("step_up_scope"):
        entry["step_up_scope"] = wanted
        try:
            save_entry(name, entry)
        except RuntimeError:
            pass  # the run's error message names the scopes anyway
    return wanted


def pending_scope(name: str, url: str) -> str | None:
    """The scopes a past `403 insufficient_scope` asked for (with those granted then), if any."""
    entry = entry_for(name, url)
    value = entry.get("step_up_scope") if entry is not None else None
    return value if isinstance(value, str) and value else None
