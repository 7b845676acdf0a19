"""One guarded HTTP GET: checked and pinned per hop, redirects re-checked, body budget, timeouts."""

from __future__ import annotations

import asyncio
import zlib
from dataclasses import dataclass, field
from typing import Any

from mermaid_cli.integrations.web.netguard import (
    FetchRefused,
    Resolver,
    check_redirect,
    check_url,
    pinned_transport,
    resolve_and_check,
)

_REDIRECTS = {301, 302, 303, 307, 308}
_CHUNK = 64 * 1024


class FetchFailed(Exception):
    """Network-level failure (timeout, connection, protocol, budget). `kind` goes to metadata."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class FetchOptions:
    """The limits of one web fetch."""

    allow_private_network: bool = False
    connect_timeout: float = 10.0
    total_timeout: float = 30.0
    max_response_bytes: int = 16 * 1024 * 1024
    max_redirects: int = 5
    user_agent: str = "Mermaid"
    #: addresses treated as public; lets tests stand a local server in for a public host
    extra_public_addresses: frozenset[str] = frozenset()


@dataclass
class Fetched:
    """A web response as fetched: where it ended up and what it held."""

    requested_url: str
    final_url: str
    status: int
    content_type: str | None
    body: bytes
    redirects: list[str] = field(default_factory=list)


def user_agent() -> str:
    from mermaid_cli import __version__

    return f"Mermaid/{__version__} (coding agent web_fetch)"


async def fetch(
    url: str,
    options: FetchOptions,
    *,
    resolver: Resolver | None = None,
    ssl_context: Any = None,
) -> Fetched:
    """GET `url` under the fetch policy. Raises FetchRefused (policy) or FetchFailed (network)."""
    try:
        async with asyncio.timeout(options.total_timeout):
            return await _fetch(url, options, resolver, ssl_context)
    except TimeoutError:
        raise FetchFailed(f"timed out after {options.total_timeout:g} s", "timeout") from None


async def _fetch(url: str, options: FetchOptions, resolver: Resolver | None, ssl_context: Any) -> Fetched:
    import httpx

    pins: dict[tuple[str, int], str] = {}
    timeout = httpx.Timeout(options.total_timeout, connect=options.connect_timeout)
    headers = {
        "User-Agent": options.user_agent,
        "Accept": "text/html,application/xhtml+xml,application/json,application/xml;q=0.9,text/plain;q=0.8,*/*;q=0.5",
        "Accept-Encoding": "gzip, deflate",  # decoded by _read_budgeted, nothing else
    }
    transport = pinned_transport(pins, ssl_context=ssl_context)
    seen: list[str] = []
    current = url
    async with httpx.AsyncClient(
        transport=transport, timeout=timeout, headers=headers, follow_redirects=False, trust_env=False
    ) as client:
        for _hop in range(options.max_redirects + 1):
            target = check_url(current)
            pins[(target.host, target.port)] = await resolve_and_check(
                target,
                allow_private=options.allow_private_network,
                resolver=resolver,
                extra_public=options.extra_public_addresses,
            )
            seen.append(target.url)
            try:
                async with client.stream("GET", target.url) as response:
                    location = response.headers.get("location")
                    if response.status_code in _REDIRECTS and location:
                        current = check_redirect(target.url, location, seen)
                        continue
                    body = await _read_budgeted(response, options.max_response_bytes)
                    return Fetched(
                        requested_url=url,
                        final_url=target.url,
                        status=response.status_code,
                        content_type=response.headers.get("content-type"),
                        body=body,
                        redirects=seen[1:],
                    )
            except httpx.TimeoutException:
                raise FetchFailed(f"timed out talking to {target.host}", "timeout") from None
            except httpx.HTTPError as exc:
                raise FetchFailed(f"request to {target.host} failed: {_short(exc)}", "network") from None
        raise FetchRefused(f"more than {options.max_redirects} redirects")


async def _read_budgeted(response: Any, budget: int) -> bytes:
    """The decoded body, refusing (and closing the connection) once it passes `budget` bytes.

    Decompression is done here with a bounded output size, so a small compressed body cannot
    expand past the budget in memory (httpx would inflate a whole chunk at once)."""
    length = response.headers.get("content-length")
    encodings = [
        e.strip().lower()
        for e in response.headers.get("content-encoding", "").split(",")
        if e.strip().lower() not in ("", "identity")
    ]
    if len(encodings) > 1 or (encodings and encodings[0] not in ("gzip", "x-gzip", "deflate")):
        raise FetchFailed(f"unsupported content-encoding {', '.join(encodings)!r}", "encoding")
    if length and length.isdigit() and not encodings and int(length) > budget:
        raise FetchFailed(
            f"response is {int(length)} bytes, over the {_mib(budget)} budget; not downloaded", "too_large"
        )
    # wbits 47 = zlib or gzip header; raw deflate (some servers) is retried below.
    inflater = zlib.decompressobj(47) if encodings else None
    started = False
    chunks: list[bytes] = []
    total = 0
    async for raw in response.aiter_raw(_CHUNK):
        if inflater is None:
            data = raw
        else:
            try:
                data = inflater.decompress(raw, budget - total + 1)
            except zlib.error:
                if started or encodings[0] != "deflate":
                    raise FetchFailed("response body is not valid compressed data", "encoding") from None
                inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                data = inflater.decompress(raw, budget - total + 1)
            started = True
        total += len(data)
        if total > budget or (inflater is not None and inflater.unconsumed_tail):
            raise FetchFailed(f"response passed the {_mib(budget)} budget; download stopped", "too_large")
        chunks.append(data)
    if inflater is not None:
        tail = inflater.flush()
        total += len(tail)
        if total > budget:
            raise FetchFailed(f"response passed the {_mib(budget)} budget; download stopped", "too_large")
        chunks.append(tail)
    return b"".join(chunks)


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):g} MiB" if n >= 1024 * 1024 else f"{n} bytes"


def _short(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]
