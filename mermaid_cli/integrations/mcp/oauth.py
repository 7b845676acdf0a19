"""Remote MCP sign-in: the SDK's OAuth client (discovery from the 401 challenge or
`/.well-known/oauth-protected-resource`, PKCE S256, configured client id else dynamic
registration) with tokens kept in the OS keyring.

Keyring entry: service `mermaid`, account `mcp-oauth:NAME`, a JSON object holding the server URL
the tokens were issued for (tokens for another URL are ignored), the tokens, their expiry time and
the registered client. Runs refresh expired tokens (and once on a 401) but never open a browser:
when a new sign-in is needed the server fails to start with a message naming `mermaid mcp login`.
`keyring`, `httpx2` and `mcp` are imported only inside functions."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlparse

from mermaid_cli.config.sections.mcp import McpServerSettings
from mermaid_cli.core.errors import UsageError

KEYRING_SERVICE = "mermaid"
RUNTIME_REDIRECT = "http://127.0.0.1/callback"


class McpLoginRequired(Exception):
    """A server needs an interactive sign-in that a run cannot do."""


def account(name: str) -> str:
    return f"mcp-oauth:{name}"


def login_hint(name: str) -> str:
    return f"MCP server {name!r} needs sign-in: run `mermaid mcp login {name}`"


# -- keyring entry --------------------------------------------------------------------------


def _enabled() -> bool:
    import os

    from mermaid_cli.security.keys import keyring_enabled

    return keyring_enabled(os.environ)


def load_entry(name: str) -> dict[str, Any] | None:
    if not _enabled():
        return None
    try:
        import keyring

        raw = keyring.get_password(KEYRING_SERVICE, account(name))
    except Exception:  # noqa: BLE001 - no keyring backend is "not signed in"
        return None
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def save_entry(name: str, entry: dict[str, Any]) -> None:
    if not _enabled():
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


def signed_in(name: str, url: str) -> bool:
    entry = load_entry(name)
    return bool(entry and entry.get("server_url") == url and entry.get("tokens"))


class KeyringTokenStorage:
    """The SDK's `TokenStorage`, bound to one server name and URL."""

    def __init__(self, name: str, url: str, configured_client: Any = None) -> None:
        self.name = name
        self.url = url
        self.configured_client = configured_client

    def _entry(self) -> dict[str, Any]:
        entry = load_entry(self.name)
        if not entry or entry.get("server_url") != self.url:
            return {"server_url": self.url}
        return entry

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


def _configured_client(cfg: McpServerSettings, redirect_uri: str) -> Any:
    import os

    from mcp.shared.auth import OAuthClientInformationFull

    oauth = cfg.oauth
    if oauth is None or not oauth.client_id:
        return None
    secret = os.environ.get(oauth.client_secret_env) if oauth.client_secret_env else None
    return OAuthClientInformationFull(
        client_id=oauth.client_id,
        client_secret=secret or None,
        token_endpoint_auth_method="client_secret_post" if secret else "none",
        redirect_uris=[redirect_uri],
        grant_types=["authorization_code", "refresh_token"],
    )


def _client_metadata(cfg: McpServerSettings, redirect_uri: str, has_secret: bool) -> Any:
    from mcp.shared.auth import OAuthClientMetadata

    scopes = cfg.oauth.scopes if cfg.oauth else []
    return OAuthClientMetadata(
        client_name="Mermaid",
        redirect_uris=[redirect_uri],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="client_secret_post" if has_secret else "none",
        scope=" ".join(scopes) or None,
    )


_PROVIDER_CLASS: Any = None


def _provider_class() -> Any:
    """The SDK provider with two additions: the stored expiry is honoured (so an expired token is
    refreshed before use), and a 401 on a token we believed valid is answered by one refresh
    before the SDK would fall back to a full (browser) sign-in."""
    global _PROVIDER_CLASS
    if _PROVIDER_CLASS is not None:
        return _PROVIDER_CLASS
    from mcp.client.auth import OAuthClientProvider

    class MermaidOAuth(OAuthClientProvider):
        login_hint: str | None = None
        #: set for runs: a 401 that a refresh cannot answer fails at once (no discovery, no
        #: client registration, no browser)
        headless_name: str | None = None

        async def _initialize(self) -> None:
            await super()._initialize()
            storage = self.context.storage
            if isinstance(storage, KeyringTokenStorage):
                self.context.token_expiry_time = storage.expires_at()
                # where the tokens came from, so a refresh goes to the right token endpoint
                metadata = storage.metadata()
                if metadata is not None and self.context.oauth_metadata is None:
                    self.context.oauth_metadata = metadata

        async def _auth_flow(self, request: Any) -> Any:
            parent = super()._auth_flow
            flow = parent(request)
            retried = False
            try:
                outgoing = await flow.__anext__()
                while True:
                    response = yield outgoing
                    if (
                        outgoing is request
                        and response.status_code == 401
                        and not retried
                        and self.context.is_token_valid()
                        and self.context.can_refresh_token()
                    ):
                        retried = True
                        await flow.aclose()
                        self.context.token_expiry_time = 1.0  # expired: the next pass refreshes first
                        flow = parent(request)
                        outgoing = await flow.__anext__()
                        continue
                    if outgoing is request and response.status_code == 401 and self.headless_name:
                        self.login_hint = login_hint(self.headless_name)
                        raise McpLoginRequired(self.login_hint)
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()

    _PROVIDER_CLASS = MermaidOAuth
    return MermaidOAuth


def runtime_auth(name: str, cfg: McpServerSettings) -> Any:
    """The httpx2 auth for a run: stored tokens, refreshed when needed, never a browser."""
    assert cfg.url is not None
    configured = _configured_client(cfg, RUNTIME_REDIRECT)
    storage = KeyringTokenStorage(name, cfg.url, configured)
    provider: Any = None

    async def refuse_browser(_url: str) -> None:
        provider.login_hint = login_hint(name)
        raise McpLoginRequired(login_hint(name))

    async def no_callback() -> Any:  # pragma: no cover - refuse_browser raises first
        raise McpLoginRequired(login_hint(name))

    provider = _provider_class()(
        server_url=cfg.url,
        client_metadata=_client_metadata(
            cfg, RUNTIME_REDIRECT, bool(configured and configured.client_secret)
        ),
        storage=storage,
        redirect_handler=refuse_browser,
        callback_handler=no_callback,
    )
    provider.headless_name = name
    return provider


# -- interactive sign-in ----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _default_open_browser(url: str) -> None:
    import webbrowser

    print(f"Open this URL to sign in:\n  {url}", file=sys.stderr)
    webbrowser.open(url)


async def login(
    name: str,
    cfg: McpServerSettings,
    *,
    open_browser: Callable[[str], None] | None = None,
    timeout_secs: float = 300.0,
) -> bool:
    """Sign in to server `name` in the browser and store its tokens. Returns False when the server
    did not ask for sign-in. Raises UsageError for a config that cannot sign in, and
    `McpLoginRequired`/RuntimeError with a message when the sign-in fails."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.auth import AuthorizationCodeResult

    if cfg.url is None:
        raise UsageError(f"MCP server {name!r} is a stdio server; only remote (url) servers sign in")
    if cfg.sends_own_authorization():
        raise UsageError(f"MCP server {name!r} sends its own Authorization header, so OAuth is off")
    if not _enabled():
        raise UsageError("the keyring is disabled (MERMAID_NO_KEYRING=1); signed-in tokens are kept there")
    port = (cfg.oauth.callback_port if cfg.oauth else None) or _free_port()
    redirect_uri = f"http://127.0.0.1:{port}/callback"
    delete_entry(name)  # a fresh sign-in: a dynamically registered client is bound to its redirect URI

    loop = asyncio.get_running_loop()
    result: asyncio.Future[dict[str, str]] = loop.create_future()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await reader.readline()).decode("latin-1")
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            parts = line.split(" ")
            target = urlparse(parts[1] if len(parts) > 1 else "/")
            params = {k: v[0] for k, v in parse_qs(target.query).items()}
            if target.path != "/callback" or not ("code" in params or "error" in params):
                body, status = "Not found", "404 Not Found"
            else:
                ok = "code" in params
                body = "Signed in to Mermaid. You can close this tab." if ok else "Sign-in failed."
                status = "200 OK"
                if not result.done():
                    result.set_result(params)
            payload = body.encode()
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
                + payload
            )
            await writer.drain()
        finally:
            writer.close()

    opener = open_browser or _default_open_browser

    async def on_redirect(url: str) -> None:
        await asyncio.get_running_loop().run_in_executor(None, opener, url)

    async def on_callback() -> Any:
        try:
            params = await asyncio.wait_for(asyncio.shield(result), timeout_secs)
        except TimeoutError:
            raise RuntimeError(f"no sign-in within {timeout_secs:g} s") from None
        if "error" in params:
            raise RuntimeError(f"sign-in refused: {params.get('error_description') or params['error']}")
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    configured = _configured_client(cfg, redirect_uri)
    storage = KeyringTokenStorage(name, cfg.url, configured)
    provider = _provider_class()(
        server_url=cfg.url,
        client_metadata=_client_metadata(cfg, redirect_uri, bool(configured and configured.client_secret)),
        storage=storage,
        redirect_handler=on_redirect,
        callback_handler=on_callback,
    )
    server = await asyncio.start_server(handle, "127.0.0.1", port)
    try:
        async with create_mcp_http_client(headers=dict(cfg.headers) or None, auth=provider) as http:
            async with Client(streamable_http_client(cfg.url, http_client=http), cache=None):
                pass
    finally:
        server.close()
        await server.wait_closed()
    if provider.context.oauth_metadata is not None:
        storage.set_metadata(provider.context.oauth_metadata)
    return signed_in(name, cfg.url)
