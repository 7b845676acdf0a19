"""What the three HTTP clients share: SSE parsing, retries, the transport and the request encoder
(the reading of failures is in `errors.py`).

Retries (429, 5xx, Anthropic `overloaded_error`, connection resets, a stream cut mid-message) restart
the whole turn: nothing of a failed attempt reaches the returned `ModelTurn`. Deltas the failed
attempt already streamed to the sink stay streamed, so a consumer may see text repeat after a
`sink.retry(...)` call; that call is the marker to reset any partial display.

Requests go out through Mermaid's own HTTP/1.1 client (`wire.py`); httpx, imported inside functions,
only when a proxy is configured and for Bedrock.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from mermaid_cli.core.errors import ProviderError
from mermaid_cli.core.kept import KeptForms
from mermaid_cli.providers.errors import Retryable, map_http_error, map_transport_error
from mermaid_cli.providers.tls import TlsContext, verified_context

if TYPE_CHECKING:
    import httpx

    from mermaid_cli.providers.base import TurnSink
    from mermaid_cli.providers.models import ModelFacts
    from mermaid_cli.providers.wire import WireClient

T = TypeVar("T")

#: Attempts per turn, the first included. The run deadline usually ends retrying first.
MAX_ATTEMPTS = 6
BASE_DELAY = 0.5
MAX_DELAY = 30.0
#: seconds to establish a connection; a connect timeout is retried like a reset or a DNS blip
CONNECT_TIMEOUT = 10.0


def encode(body: object) -> bytes:
    """Deterministic compact JSON: the same request prefix always has the same bytes (caching)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class BodyEncoder:
    """`encode(body)`, byte for byte, with each item of the growing conversation (`key`, the body's
    last field) encoded once: the providers hand back the same item objects turn after turn (their
    `KeptForms` of messages), so only what is new is encoded. The other fields are encoded again
    only when they are not the last turn's objects (the tools and system prompt a provider keeps
    with `LastMade`) or strings equal to them."""

    def __init__(self, key: str) -> None:
        self.key = key
        self._encoded: KeptForms[Any, bytes] = KeptForms()
        self._fields: dict[str, tuple[Any, bytes]] = {}

    def encode(self, body: dict[str, Any]) -> bytes:
        items = body.get(self.key)
        if not isinstance(items, list) or not items or next(reversed(body)) != self.key:
            return encode(body)
        kept, self._fields = self._fields, {}
        parts = []
        for name, value in body.items():
            if name == self.key:
                break
            hit = kept.get(name)
            # the same object, or an equal string (1 == True == 1.0 would encode differently)
            if hit is not None and (hit[0] is value or (type(value) is str and hit[0] == value)):
                encoded = hit[1]
            else:
                encoded = encode(value)
            self._fields[name] = (value, encoded)
            parts.append(encode(name) + b":" + encoded)
        parts.append(encode(self.key) + b":[" + b",".join(self._encoded.forms(items, None, encode)) + b"]")
        return b"{" + b",".join(parts) + b"}"


@dataclass(frozen=True)
class SSEEvent:
    """One server-sent event: its name and data."""

    event: str | None
    data: str

    def json(self) -> Any:
        try:
            return json.loads(self.data)
        except ValueError:
            raise Retryable(
                f"the provider sent an event that is not JSON: {self.data[:200]!r}", code="bad_event"
            ) from None


class SSEParser:
    """text/event-stream framing, a line at a time: the event a blank line completes, comments
    skipped."""

    def __init__(self) -> None:
        self.event: str | None = None
        self.data: list[str] = []

    def line(self, raw: str) -> SSEEvent | None:
        line = raw.rstrip("\r\n")
        if not line:
            done = SSEEvent(self.event, "\n".join(self.data)) if self.data else None
            self.event, self.data = None, []
            return done
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            self.event = value
        elif field == "data":
            self.data.append(value)
        return None


async def iter_sse(lines: AsyncIterator[str]) -> AsyncIterator[SSEEvent]:
    """Server-sent events from a line iterator (text/event-stream framing, comments skipped)."""
    parser = SSEParser()
    async for raw in lines:
        event = parser.line(raw)
        if event is not None:
            yield event
    # An unterminated trailing event is a cut stream; callers notice the missing terminal event.


def redact(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def backoff_delay(attempt: int, retry_after: float | None) -> float:
    """Exponential backoff with full jitter; a provider's `retry-after` is honoured as a floor."""
    computed = random.uniform(0, min(MAX_DELAY, BASE_DELAY * (2**attempt)))
    if retry_after is not None:
        return max(retry_after, min(computed, retry_after * 2))
    return computed


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    sink: TurnSink,
    *,
    deadline: float | None,
    secrets: tuple[str, ...] = (),
    max_attempts: int = MAX_ATTEMPTS,
) -> T:
    """Run `attempt` until it succeeds, fails for good, or the deadline (time.monotonic()) nears."""
    for n in range(max_attempts):
        try:
            return await attempt()
        except Retryable as exc:
            message = redact(exc.message, secrets)
            if n + 1 >= max_attempts:
                raise ProviderError(
                    f"{message} (gave up after {max_attempts} attempts)",
                    code=exc.code,
                    status_code=exc.status_code,
                ) from None
            delay = backoff_delay(n, exc.retry_after)
            if deadline is not None and time.monotonic() + delay >= deadline:
                raise ProviderError(
                    f"{message} (no time left to retry before the run deadline)",
                    code=exc.code,
                    status_code=exc.status_code,
                ) from None
            sink.retry(f"{message}; retrying in {delay:.1f}s (attempt {n + 2}/{max_attempts})", exc.code)
            await asyncio.sleep(delay)
        except ProviderError as exc:
            exc.message = redact(exc.message, secrets)
            exc.args = (exc.message,)
            raise
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            # A response whose shape we cannot read: the provider's fault far more often than ours.
            detail = redact(f"{type(exc).__name__}: {exc}", secrets)[:300]
            raise ProviderError(
                f"malformed response from the provider ({detail})", code="bad_response"
            ) from None
    raise AssertionError("unreachable")  # pragma: no cover


#: environment variables that name a proxy (any case): with one set, requests go through httpx
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def proxy_configured(env: Mapping[str, str]) -> bool:
    """Whether the environment names a proxy (`NO_PROXY` alone names none)."""
    return any(env.get(name) or env.get(name.upper()) for name in PROXY_VARIABLES)


class HttpTransport:
    """The streaming POST all clients use: Mermaid's own HTTP/1.1 client (`wire.py`) for a direct
    connection; httpx, created lazily, when a proxy is configured (it speaks HTTP(S)_PROXY and
    NO_PROXY) and for Bedrock's signed requests."""

    def __init__(
        self,
        provider: str,
        *,
        base_url: str,
        secrets: tuple[str, ...] = (),
        timeout: float = 600.0,
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        self.provider = provider
        #: started now, so an https endpoint's CA bundle loads while the run assembles
        self._tls = TlsContext(base_url)
        self.secrets = secrets
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._client: httpx.AsyncClient | None = None
        self._direct: WireClient | None = None
        self._proxied = proxy_configured(os.environ)

    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            import socket

            import httpx

            timeout = httpx.Timeout(self._timeout, connect=self._connect_timeout)
            if self._proxied:
                # httpx applies HTTP(S)_PROXY / NO_PROXY only to a client without its own transport;
                # the proxy itself may speak TLS, so this client always trusts the CA bundle
                verify = self._tls.get() if not self._tls.plain else verified_context()
                self._client = httpx.AsyncClient(
                    timeout=timeout, follow_redirects=False, trust_env=True, verify=verify
                )
            else:
                verify = self._tls.get()
                # TCP_NODELAY: on a reused connection headers and body go out as separate writes;
                # Nagle + delayed ACK would hold the body back ~40 ms per request.
                transport = httpx.AsyncHTTPTransport(
                    verify=verify, socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
                )
                self._client = httpx.AsyncClient(
                    timeout=timeout, follow_redirects=False, trust_env=True, transport=transport
                )
        return self._client

    def direct(self) -> WireClient | None:
        """The client for a direct connection; None when a proxy is configured."""
        if self._direct is None and not self._proxied:
            from mermaid_cli import __version__
            from mermaid_cli.providers.wire import WireClient

            self._direct = WireClient(
                self._tls.get,
                timeout=self._timeout,
                connect_timeout=self._connect_timeout,
                user_agent=f"Mermaid/{__version__}",
            )
        return self._direct

    async def stream_events(self, url: str, headers: dict[str, str], body: bytes) -> AsyncIterator[SSEEvent]:
        """POST `body` and yield SSE events. Non-2xx → mapped error; transport failure → mapped error."""
        direct = self.direct()
        if direct is None:
            async for event in self._stream_proxied(url, headers, body):
                yield event
            return
        from mermaid_cli.providers.wire import WireError

        try:
            async with direct.request("POST", url, headers, body) as response:
                if response.status >= 300:
                    raw = (await response.read()).decode("utf-8", "replace")
                    raise map_http_error(self.provider, response.status, raw, response.headers)
                parser = SSEParser()
                async for batch in response.line_batches():
                    for line in batch:
                        done = parser.line(line)
                        if done is not None:
                            yield done
        except WireError as exc:
            raise map_transport_error(self.provider, url, exc) from None

    async def _stream_proxied(
        self, url: str, headers: dict[str, str], body: bytes
    ) -> AsyncIterator[SSEEvent]:
        import httpx

        from mermaid_cli.providers.wire import ack_promptly

        client = self.client()
        try:
            async with client.stream("POST", url, headers=headers, content=body) as response:
                stream = response.extensions.get("network_stream")
                ack_promptly(stream.get_extra_info("socket") if stream is not None else None)
                if response.status_code >= 300:
                    raw = (await response.aread()).decode("utf-8", "replace")
                    raise map_http_error(self.provider, response.status_code, raw, response.headers)
                async for event in iter_sse(response.aiter_lines()):
                    yield event
        except httpx.HTTPError as exc:
            raise map_transport_error(self.provider, url, exc) from None

    async def post_json(self, url: str, headers: dict[str, str], body: bytes) -> Any:
        """POST `body` and return the parsed JSON response (a request sent with `stream: false`)."""
        status, text, response_headers = await self._post(
            url, {**headers, "accept": "application/json"}, body
        )
        if status >= 300:
            raise map_http_error(self.provider, status, text, response_headers)
        try:
            return json.loads(text)
        except ValueError:
            raise Retryable(
                f"{self.provider}: the response is not JSON: {text[:200]!r}", code="bad_response"
            ) from None

    async def _post(
        self, url: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, str, Mapping[str, str]]:
        direct = self.direct()
        if direct is not None:
            from mermaid_cli.providers.wire import WireError

            try:
                async with direct.request("POST", url, headers, body) as response:
                    raw = await response.read()
            except WireError as exc:
                raise map_transport_error(self.provider, url, exc) from None
            charset = _charset(response.headers.get("content-type", ""))
            return response.status, raw.decode(charset, "replace"), response.headers
        import httpx

        try:
            proxied = await self.client().post(url, headers=headers, content=body)
        except httpx.HTTPError as exc:
            raise map_transport_error(self.provider, url, exc) from None
        return proxied.status_code, proxied.text, proxied.headers

    async def aclose(self) -> None:
        if self._direct is not None:
            await self._direct.aclose()
            self._direct = None
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _charset(content_type: str) -> str:
    """The charset a Content-Type names, if Python knows it; UTF-8 otherwise (JSON's own)."""
    import codecs

    for param in content_type.split(";")[1:]:
        name, _, value = param.strip().partition("=")
        if name.lower() == "charset" and value:
            try:
                return codecs.lookup(value.strip('"')).name
            except LookupError:
                break
    return "utf-8"


@dataclass(frozen=True)
class Endpoint:
    """Everything a client needs to reach one model. `api_key` never appears in messages."""

    provider: str  # the id prefix: anthropic, openai, groq, or a [providers.NAME]
    model: str  # passed verbatim to the vendor
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    extra_headers: tuple[tuple[str, str], ...] = ()
    native_tools: bool = True
    deadline: float | None = None  # time.monotonic() value; retries stop before it
    connect_timeout: float = CONNECT_TIMEOUT
    #: the model's row of the table (with [models]/[pricing] applied); looked up when not given
    facts: ModelFacts | None = field(default=None, compare=False, repr=False)
    #: credentials besides `api_key` the run must redact (Bedrock's AWS keys and session token)
    other_secrets: tuple[str, ...] = field(default=(), repr=False)

    @property
    def model_id(self) -> str:
        return f"{self.provider}/{self.model}"

    @property
    def model_facts(self) -> ModelFacts:
        from mermaid_cli.providers.models import facts_for

        return self.facts if self.facts is not None else facts_for(self.model_id)

    @property
    def secrets(self) -> tuple[str, ...]:
        return ((self.api_key,) if self.api_key else ()) + self.other_secrets


def split_last_item(raw: bytes, key: str) -> bytes:
    """The bytes of an encoded request before the last element of its final array `key`.

    Requests put the growing conversation last, so this is the cacheable prefix: a turn whose
    prefix starts with the previous turn's prefix reuses the provider's prompt cache."""
    body = json.loads(raw)
    items = body.get(key) or []
    if not items:
        return raw
    tail = json.dumps(items[-1], ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    end = raw.rfind(tail)
    return raw[:end] if end >= 0 else raw
