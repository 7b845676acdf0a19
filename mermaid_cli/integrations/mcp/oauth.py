"""Remote MCP sign-in, the client side shared by runs and `mermaid mcp login`: the SDK's OAuth
provider (discovery from the 401 challenge or `/.well-known/oauth-protected-resource`, PKCE S256,
`iss` check) with Mermaid's client choice and its headless rules.

The client, in the MCP spec's order: a configured `oauth.client_id`, then Mermaid's Client ID
Metadata Document URL as the client id when the authorization server advertises
`client_id_metadata_document_supported`, then dynamic client registration. Runs refresh expired
tokens (and once on a 401) but never open a browser: when a new sign-in is needed the server fails
to start with a message naming `mermaid mcp login`, and a `403 insufficient_scope` fails the call
with the scopes asked for, remembered for the next sign-in. The interactive flow is in
`oauth_flow`, the keyring entry in `oauth_store`. `httpx2` and `mcp` are imported only inside
functions."""

from __future__ import annotations

import os
from typing import Any

from mermaid_cli.config.sections.mcp import McpServerSettings
from mermaid_cli.integrations.mcp.oauth_store import KeyringTokenStorage, record_step_up, union_scopes

RUNTIME_REDIRECT = "http://127.0.0.1/callback"
#: Mermaid's Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document): the URL is
#: the client id; the document lists the loopback redirect `http://127.0.0.1/callback` (any port,
#: RFC 8252 §7.3). `oauth.client_metadata_url` replaces it per server; "" turns CIMD off.
DEFAULT_CLIENT_METADATA_URL = "https://noahsabaj.github.io/mermaid-cli/oauth/client-metadata.json"


class McpLoginRequired(Exception):
    """A server needs an interactive sign-in (or a wider one) that a run cannot do."""


def login_hint(name: str) -> str:
    return f"MCP server {name!r} needs sign-in: run `mermaid mcp login {name}`"


def step_up_hint(name: str, scope: str | None) -> str:
    wanted = f" (scopes: {scope})" if scope else ""
    return (
        f"MCP server {name!r} needs more access for this call{wanted}: run `mermaid mcp login {name}` "
        "to sign in again with them"
    )


def client_metadata_url(cfg: McpServerSettings) -> str | None:
    """The Client ID Metadata Document URL offered for this server (None: CIMD off)."""
    configured = cfg.oauth.client_metadata_url if cfg.oauth else None
    if configured is None:
        return DEFAULT_CLIENT_METADATA_URL
    return configured or None


def _configured_client(cfg: McpServerSettings, redirect_uri: str) -> Any:
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
    """The SDK provider with Mermaid's additions: the stored expiry is honoured (so an expired
    token is refreshed before use); a 401 on a token we believed valid is answered by one refresh
    before the SDK would fall back to a full (browser) sign-in; configured scopes replace the ones
    the server suggests and remembered step-up scopes are added to them; and, headless, a 401 or a
    `403 insufficient_scope` fails at once with a message instead of a sign-in."""
    global _PROVIDER_CLASS
    if _PROVIDER_CLASS is not None:
        return _PROVIDER_CLASS
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.auth.utils import extract_field_from_www_auth, extract_scope_from_www_auth

    class MermaidOAuth(OAuthClientProvider):
        login_hint: str | None = None
        #: set for runs: a 401 that a refresh cannot answer fails at once (no discovery, no
        #: client registration, no browser), and so does a 403 insufficient_scope
        headless_name: str | None = None
        #: `oauth.scopes`, which replace the scopes the server suggests
        configured_scope: str | None = None
        #: scopes a past 403 insufficient_scope asked for, requested on top
        extra_scope: str | None = None
        #: the SDK's own step-up is under way: its scope union is kept as is
        stepping_up = False
        #: headless: why the last call was refused with 403 insufficient_scope (taken by the
        #: manager, which reports it instead of the transport's generic error)
        step_up_refusal: str | None = None

        async def _initialize(self) -> None:
            await super()._initialize()
            storage = self.context.storage
            if isinstance(storage, KeyringTokenStorage):
                self.context.token_expiry_time = storage.expires_at()
                # where the tokens came from, so a refresh goes to the right token endpoint
                metadata = storage.metadata()
                if metadata is not None and self.context.oauth_metadata is None:
                    self.context.oauth_metadata = metadata

        def secrets(self) -> list[str]:
            """The tokens and client secret this provider holds (to keep them out of results)."""
            tokens, client = self.context.current_tokens, self.context.client_info
            found = [tokens.access_token, tokens.refresh_token] if tokens is not None else []
            found.append(client.client_secret if client is not None else None)
            return [value for value in found if value]

        async def _perform_authorization(self) -> Any:
            chosen = self.context.client_metadata.scope
            if self.configured_scope and not self.stepping_up:
                chosen = self.configured_scope
            self.context.client_metadata.scope = union_scopes(chosen, self.extra_scope)
            return await super()._perform_authorization()

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
                    insufficient = (
                        outgoing is request
                        and response.status_code == 403
                        and extract_field_from_www_auth(response, "error") == "insufficient_scope"
                    )
                    if insufficient and self.headless_name:
                        # RFC 6750 §3.1: the token lacks scope. A run cannot sign in again, so the
                        # 403 stands (raising here would close the whole connection) and the call
                        # fails naming the scopes, which the next `mermaid mcp login` requests
                        wanted = record_step_up(
                            self.headless_name, self.context.server_url, extract_scope_from_www_auth(response)
                        )
                        self.login_hint = self.step_up_refusal = step_up_hint(self.headless_name, wanted)
                        return
                    if insufficient:
                        self.stepping_up = True
                    outgoing = await flow.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await flow.aclose()

    _PROVIDER_CLASS = MermaidOAuth
    return MermaidOAuth


def make_provider(
    name: str,
    cfg: McpServerSettings,
    redirect_uri: str,
    redirect_handler: Any,
    callback_handler: Any,
) -> Any:
    """The provider for server `name`: the configured client (if any) wins over the Client ID
    Metadata Document, which the SDK prefers over dynamic registration when the authorization
    server supports it — the spec's order."""
    assert cfg.url is not None
    configured = _configured_client(cfg, redirect_uri)
    provider = _provider_class()(
        server_url=cfg.url,
        client_metadata=_client_metadata(cfg, redirect_uri, bool(configured and configured.client_secret)),
        storage=KeyringTokenStorage(name, cfg.url, configured),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        client_metadata_url=client_metadata_url(cfg),
    )
    provider.configured_scope = union_scopes(*(cfg.oauth.scopes if cfg.oauth else []))
    return provider


def runtime_auth(name: str, cfg: McpServerSettings) -> Any:
    """The httpx2 auth for a run: stored tokens, refreshed when needed, never a browser."""
    provider: Any = None

    async def refuse_browser(_url: str) -> None:
        provider.login_hint = login_hint(name)
        raise McpLoginRequired(login_hint(name))

    async def no_callback() -> Any:  # pragma: no cover - refuse_browser raises first
        raise McpLoginRequired(login_hint(name))

    provider = make_provider(name, cfg, RUNTIME_REDIRECT, refuse_browser, no_callback)
    provider.headless_name = name
    return provider
