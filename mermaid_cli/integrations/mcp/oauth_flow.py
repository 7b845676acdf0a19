"""`mermaid mcp login`: the interactive sign-in to a remote MCP server, done by a person.

Two ways back from the browser: a loopback listener on `http://127.0.0.1:PORT/callback` (the
default), or — for remote shells, where the browser runs on another machine — nothing listening:
the person pastes the address the browser ends on (or just its `code`) on stdin. Either way the
response's `state` must be this sign-in's and, when the authorization server advertises RFC 9207,
its `iss` must be the server's issuer (mix-up defence) before the code is redeemed; a mismatch is a
UsageError and nothing is stored. Scopes a past `403 insufficient_scope` asked for are requested
together with the old ones."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlparse

from mermaid_cli.config.sections.mcp import McpServerSettings
from mermaid_cli.core.daemon_read import on_daemon_thread
from mermaid_cli.core.errors import UsageError
from mermaid_cli.integrations.mcp.oauth import make_provider
from mermaid_cli.integrations.mcp.oauth_store import delete_entry, keyring_available, pending_scope, signed_in

#: reads one line of the pasted redirect address; "" means end of input
ReadLine = Callable[[], str]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _default_open_browser(url: str) -> None:
    import webbrowser

    print(f"Open this URL to sign in:\n  {url}", file=sys.stderr)
    webbrowser.open(url)


def _print_paste_prompt(url: str) -> None:
    redirect = parse_qs(urlparse(url).query).get("redirect_uri", ["the redirect URI"])[0]
    print(
        "Open this URL in a browser on any machine and sign in:\n"
        f"  {url}\n"
        f"The browser then ends on an address starting with {redirect} (the page will not load "
        "there). Paste that whole address here and press Enter:",
        file=sys.stderr,
        flush=True,
    )


def parse_pasted(text: str) -> tuple[dict[str, str], bool]:
    """The authorization response in a pasted redirect address, and whether it was a bare code."""
    text = text.strip()
    if not text:
        raise UsageError("nothing was pasted: paste the address the browser ended on")
    if "://" in text or text.startswith("?") or "code=" in text or "error=" in text:
        query = urlparse(text).query if "://" in text else text.lstrip("?")
        params = {k: v[0] for k, v in parse_qs(query).items()}
        if "code" not in params and "error" not in params:
            raise UsageError("the pasted address carries no `code` (nor `error`): paste the whole address")
        return params, False
    return {"code": text}, True


def check_response(
    params: dict[str, str], expected_state: str | None, metadata: Any, *, bare: bool = False
) -> None:
    """Refuse an authorization response that is not this sign-in's (state) or not from the server
    we sent the person to (RFC 9207 `iss`), before any code is redeemed. A `bare` pasted code has
    no state to compare: the person copied it from this sign-in's page."""
    if "error" in params:
        raise RuntimeError(f"sign-in refused: {params.get('error_description') or params['error']}")
    state = params.get("state")
    if not bare and state != expected_state:
        raise UsageError(
            "the sign-in response's `state` does not match this sign-in (a stale or foreign "
            "address?); nothing was stored — run the login again and use the address it prints"
        )
    issuer = str(metadata.issuer) if metadata is not None else None
    iss = params.get("iss")
    if iss is not None and iss != issuer:
        raise UsageError(
            f"the sign-in response comes from issuer {iss!r}, not {issuer!r} (RFC 9207 mix-up "
            "defence); nothing was stored"
        )
    if iss is None and metadata is not None and metadata.authorization_response_iss_parameter_supported:
        raise UsageError(
            f"the sign-in response carries no `iss`, which {issuer!r} promises to send (RFC 9207); "
            "paste the whole address, not just the code; nothing was stored"
        )


async def _read_pasted(read_line: ReadLine) -> str:
    """One line from `read_line`: an abandoned read (a timeout) never keeps the process alive at exit."""
    return await on_daemon_thread(read_line, "mcp-login-paste") or ""


async def login(
    name: str,
    cfg: McpServerSettings,
    *,
    open_browser: Callable[[str], None] | None = None,
    paste: ReadLine | None = None,
    timeout_secs: float = 300.0,
) -> bool:
    """Sign in to server `name` and store its tokens. With `paste`, no listener is started: the
    authorization URL goes to stderr and the redirect address is read with `paste`. Returns False
    when the server did not ask for sign-in. Raises UsageError for a config that cannot sign in or
    a response that is not this sign-in's, RuntimeError with a message when the sign-in fails."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.auth import AuthorizationCodeResult

    if cfg.url is None:
        raise UsageError(f"MCP server {name!r} is a stdio server; only remote (url) servers sign in")
    if cfg.sends_own_authorization():
        raise UsageError(f"MCP server {name!r} sends its own Authorization header, so OAuth is off")
    if not keyring_available():
        raise UsageError("the keyring is disabled (MERMAID_NO_KEYRING=1); signed-in tokens are kept there")
    port = (cfg.oauth.callback_port if cfg.oauth else None) or _free_port()
    redirect_uri = f"http://127.0.0.1:{port}/callback"
    step_up = pending_scope(name, cfg.url)
    delete_entry(name)  # a fresh sign-in: a dynamically registered client is bound to its redirect URI

    loop = asyncio.get_running_loop()
    result: asyncio.Future[dict[str, str]] = loop.create_future()
    sent_state: list[str | None] = [None]
    refusal: list[UsageError] = []

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

    opener = open_browser or (_print_paste_prompt if paste is not None else _default_open_browser)

    async def on_redirect(url: str) -> None:
        sent_state[0] = parse_qs(urlparse(url).query).get("state", [None])[0]
        await asyncio.get_running_loop().run_in_executor(None, opener, url)

    async def on_callback() -> Any:
        try:
            return await receive()
        except UsageError as exc:
            refusal.append(exc)  # the transport wraps what the auth flow raises: kept to re-raise
            raise

    async def receive() -> Any:
        bare = False
        try:
            if paste is not None:
                line = await asyncio.wait_for(_read_pasted(paste), timeout_secs)
                if not line:
                    raise UsageError("no address was pasted (end of input); nothing was stored")
                params, bare = parse_pasted(line)
            else:
                params = await asyncio.wait_for(asyncio.shield(result), timeout_secs)
        except TimeoutError:
            raise RuntimeError(f"no sign-in within {timeout_secs:g} s") from None
        check_response(params, sent_state[0], provider.context.oauth_metadata, bare=bare)
        # checked: the state is this sign-in's (a bare code carries none)
        return AuthorizationCodeResult(code=params["code"], state=sent_state[0], iss=params.get("iss"))

    provider = make_provider(name, cfg, redirect_uri, on_redirect, on_callback)
    provider.extra_scope = step_up
    server = await asyncio.start_server(handle, "127.0.0.1", port) if paste is None else None
    try:
        async with create_mcp_http_client(headers=dict(cfg.headers) or None, auth=provider) as http:
            async with Client(streamable_http_client(cfg.url, http_client=http), cache=None):
                pass
    except Exception:
        if refusal:
            raise refusal[0] from None
        raise
    finally:
        if server is not None:
            server.close()
            await server.wait_closed()
    if provider.context.oauth_metadata is not None:
        provider.context.storage.set_metadata(provider.context.oauth_metadata)
    return signed_in(name, cfg.url)
