"""A Streamable HTTP MCP server that is also its own OAuth authorization server (the SDK's
server-side auth pieces) with an in-memory provider that approves every authorization at once.

Flags: --http PORT (required), --client-id ID [--client-secret S] (a pre-registered client),
--token-lifetime SECS, --cimd (advertise `client_id_metadata_document_supported`; an https client
id is taken as a Client ID Metadata Document whose redirect is loopback `/callback`, any port —
fetching it is out of reach of a local test), --iss correct|wrong|omit (advertise RFC 9207 and
send the right `iss`, a foreign one, or none), --step-up (tool `admin_report` needs scope `admin`
on top of `mcp`: a token without it gets `403 insufficient_scope`). Tool `leak_tokens` echoes the
latest tokens issued (a careless server). Admin routes for tests: POST
/admin/revoke-access (drop all access tokens, keep refresh tokens), GET /admin/stats (JSON
counters, the client ids and scopes of each authorization)."""

from __future__ import annotations

import argparse
import json
import secrets
import time
import warnings

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp_types import ToolAnnotations
from pydantic import AnyUrl
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

warnings.simplefilter("ignore")


SCOPES = ["mcp", "admin"]


class MetadataDocumentClient(OAuthClientInformationFull):
    """A client known by its metadata document: loopback redirects on any port (RFC 8252 §7.3)."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        if redirect_uri is None or redirect_uri.host != "127.0.0.1" or redirect_uri.path != "/callback":
            return super().validate_redirect_uri(redirect_uri)
        return redirect_uri


class Provider:
    def __init__(self, lifetime: int, cimd: bool = False, iss: str | None = None) -> None:
        self.lifetime = lifetime
        self.cimd = cimd
        self.iss = iss  # the value sent in the redirect (None: no iss parameter)
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.stats = {
            "registered": 0,
            "authorized": 0,
            "code_exchanges": 0,
            "refreshes": 0,
            "resources": [],
            "client_ids": [],
            "scopes": [],
            "insufficient_scope": 0,
        }

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if self.cimd and client_id.startswith("https://") and client_id not in self.clients:
            self.clients[client_id] = MetadataDocumentClient(
                client_id=client_id,
                token_endpoint_auth_method="none",
                redirect_uris=[AnyUrl("http://127.0.0.1/callback")],
                grant_types=["authorization_code", "refresh_token"],
                scope=" ".join(SCOPES),
            )
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.stats["registered"] += 1
        client_info.scope = " ".join(SCOPES)  # a lenient server: any supported scope may be asked later
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.stats["authorized"] += 1
        self.stats["resources"].append(params.resource)
        self.stats["client_ids"].append(client.client_id)
        self.stats["scopes"].append(" ".join(params.scopes or []))
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state, iss=self.iss)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = secrets.token_urlsafe(24)
        refresh = secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.lifetime,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access, expires_in=self.lifetime, refresh_token=refresh, scope=" ".join(scopes)
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.stats["code_exchanges"] += 1
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        token = self.refresh.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError("invalid_grant", "unknown refresh token")
        self.stats["refreshes"] += 1
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, required=True)
    parser.add_argument("--client-id")
    parser.add_argument("--client-secret")
    parser.add_argument("--redirect-uri")
    parser.add_argument("--token-lifetime", type=int, default=3600)
    parser.add_argument("--cimd", action="store_true")
    parser.add_argument("--iss", choices=["correct", "wrong", "omit"])
    parser.add_argument("--step-up", action="store_true")
    args = parser.parse_args()

    base = f"http://127.0.0.1:{args.http}"
    issuer = base  # the metadata's issuer, as the SDK renders it (compared as a plain string)
    sent_iss = {"correct": issuer, "wrong": "https://evil.example/", "omit": None}.get(args.iss or "")
    provider = Provider(args.token_lifetime, cimd=args.cimd, iss=sent_iss)
    if args.client_id:
        provider.clients[args.client_id] = OAuthClientInformationFull(
            client_id=args.client_id,
            client_secret=args.client_secret,
            token_endpoint_auth_method="client_secret_post" if args.client_secret else "none",
            redirect_uris=[args.redirect_uri] if args.redirect_uri else None,
            scope="mcp",
            grant_types=["authorization_code", "refresh_token"],
        )
    server = MCPServer(
        "oauth",
        log_level="CRITICAL",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=SCOPES, default_scopes=["mcp"]
            ),
            required_scopes=["mcp"],
            validate_token_resource=False,
        ),
    )

    @server.tool(description="Who am I.")
    def whoami() -> str:
        return "authenticated"

    @server.tool(
        description="A report that needs the admin scope.", annotations=ToolAnnotations(readOnlyHint=True)
    )
    def admin_report() -> str:
        return "admin report"

    @server.tool(
        description="A careless tool: echoes the latest tokens.",
        annotations=ToolAnnotations(readOnlyHint=True),
    )
    def leak_tokens() -> str:
        return f"access={list(provider.access)[-1]} refresh={list(provider.refresh)[-1]}"

    @server.custom_route("/admin/revoke-access", methods=["POST"])
    async def revoke_access(request: Request) -> JSONResponse:
        provider.access.clear()
        return JSONResponse({"ok": True})

    @server.custom_route("/admin/stats", methods=["GET"])
    async def stats(request: Request) -> JSONResponse:
        return JSONResponse(provider.stats)

    import uvicorn

    extra_metadata: dict[str, bool] = {}
    if args.cimd:
        extra_metadata["client_id_metadata_document_supported"] = True
    if args.iss:
        extra_metadata["authorization_response_iss_parameter_supported"] = True
    app = wrap(server.streamable_http_app(), provider, base, extra_metadata, args.step_up)
    uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")


def wrap(inner: ASGIApp, provider: Provider, base: str, extra: dict[str, bool], step_up: bool) -> ASGIApp:
    """Adds fields to the authorization server metadata, and (step-up) answers a call of
    `admin_report` without the `admin` scope with 403 insufficient_scope (RFC 6750 §3.1)."""

    async def respond(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await inner(scope, receive, send)
        path, method = scope["path"], scope["method"]
        if extra and method == "GET" and path == "/.well-known/oauth-authorization-server":
            captured: list[Message] = []

            async def keep(message: Message) -> None:
                captured.append(message)

            await inner(scope, receive, keep)
            body = b"".join(m.get("body", b"") for m in captured if m["type"] == "http.response.body")
            payload = json.dumps({**json.loads(body), **extra}).encode()
            return await respond(send, 200, payload, [(b"content-type", b"application/json")])
        if step_up and method == "POST" and path.startswith("/mcp"):
            chunks: list[bytes] = []
            while True:
                message = await receive()
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    break
            body = b"".join(chunks)
            try:
                call = json.loads(body)
            except ValueError:
                call = None
            if isinstance(call, dict) and call.get("method") == "tools/call":
                if (call.get("params") or {}).get("name") == "admin_report":
                    auth = dict(scope["headers"]).get(b"authorization", b"").decode()
                    token = provider.access.get(auth.removeprefix("Bearer ").strip())
                    if token is not None and "admin" not in token.scopes:
                        provider.stats["insufficient_scope"] += 1
                        challenge = (
                            'Bearer error="insufficient_scope", scope="mcp admin", '
                            f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
                        )
                        return await respond(
                            send,
                            403,
                            b'{"error": "insufficient_scope"}',
                            [
                                (b"content-type", b"application/json"),
                                (b"www-authenticate", challenge.encode()),
                            ],
                        )
            replayed = False

            async def replay() -> Message:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            return await inner(scope, replay, send)
        return await inner(scope, receive, send)

    return app


if __name__ == "__main__":
    main()
