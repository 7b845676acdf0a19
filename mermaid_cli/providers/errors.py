"""How the HTTP clients read a failure: retryable, context too long, or final (exit 5).

`map_http_error` reads a non-2xx response (status, the vendor's error body, `x-should-retry`,
`retry-after`), `map_stream_error` an error delivered inside a 200 stream, `map_transport_error`
a failure below HTTP (a refused connection fails fast; resets, timeouts and DNS failures are
retried). `Retryable` carries the provider's `retry_after`; `with_retries` (http.py) acts on it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from mermaid_cli.core.errors import ContextTooLong, ProviderError

_CONTEXT_PHRASES = (
    "prompt is too long",
    "context_length_exceeded",
    "maximum context length",
    "context window",
    "context length",
    "too many tokens",
    "input is too long",
)
_RETRYABLE_TYPES = {
    "overloaded_error",
    "api_error",
    "rate_limit_error",
    "server_error",
    "rate_limit_exceeded",
    "server_is_overloaded",
}


def _retryable_kind(kind: str) -> bool:
    """A stream error type/code worth another attempt: a known transient type, or an HTTP-like
    status code (`"code": 502`) of 429 or 5xx, as OpenAI-compatible servers put in error chunks."""
    if kind in _RETRYABLE_TYPES:
        return True
    return kind.isdigit() and (int(kind) == 429 or 500 <= int(kind) <= 599)


class Retryable(ProviderError):
    """A failure worth another attempt. `retry_after` (seconds) comes from the provider."""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status_code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, code=code, retryable=True, status_code=status_code)
        self.retry_after = retry_after


class StreamCut(Retryable):
    def __init__(self, message: str = "the response stream ended before the message was complete") -> None:
        super().__init__(message, code="stream_cut")


#: characters of a provider's error message kept (in `result.errors`, the `error` event, stderr)
MAX_ERROR_MESSAGE = 2000


def _error_text(body: str) -> tuple[str, str | None]:
    """(message, error type/code) from an Anthropic or OpenAI error body, or the raw text; the
    message cut to `MAX_ERROR_MESSAGE` (a 5 MB message was copied whole into every report)."""
    message, kind = _parsed_error(body)
    if len(message) > MAX_ERROR_MESSAGE:
        message = message[:MAX_ERROR_MESSAGE] + f"... ({len(message) - MAX_ERROR_MESSAGE} more characters)"
    return message, kind


def _parsed_error(body: str) -> tuple[str, str | None]:
    try:
        obj = json.loads(body)
    except ValueError:
        return (body.strip()[:500] or "no error message"), None
    if isinstance(obj, list) and obj:
        obj = obj[0]
    if isinstance(obj, dict):
        err = obj.get("error", obj)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail") or json.dumps(err)[:500]
            kind = err.get("type") or err.get("code")
            return str(msg), (str(kind) if kind else None)
        if isinstance(err, str):
            return err, None
    return body.strip()[:500], None


def _retry_after(headers: Any) -> float | None:
    for name in ("retry-after-ms", "retry-after"):
        value = headers.get(name) if headers is not None else None
        if value is None:
            continue
        try:
            seconds = float(value)
        except ValueError:
            return None  # an HTTP date: rare from these APIs; fall back to our backoff
        if not math.isfinite(seconds) or seconds < 0:
            return None  # `nan` slept until the run's deadline, `-5` not at all: our backoff
        return seconds / 1000 if name == "retry-after-ms" else seconds
    return None


def map_http_error(provider: str, status: int, body: str, headers: Any = None) -> ProviderError:
    """The error for a non-2xx response: retryable, context too long, or final (exit 5)."""
    message, kind = _error_text(body)
    text = f"{provider}: HTTP {status}: {message}"
    lowered = f"{message} {kind or ''} {body[:2000]}".lower()
    should_retry = (headers.get("x-should-retry") or "").lower() if headers is not None else ""
    retryable = status in (408, 409, 429) or status >= 500 or kind in ("overloaded_error",)
    # Both vendors may say explicitly whether a retry can help (their SDKs honour it too).
    if should_retry in ("true", "false"):
        retryable = should_retry == "true"
    if retryable:
        return Retryable(
            text, code=kind or f"http_{status}", status_code=status, retry_after=_retry_after(headers)
        )
    if status in (400, 413, 422) and any(p in lowered for p in _CONTEXT_PHRASES):
        return ContextTooLong(text, status_code=status)
    if status in (401, 403):
        return ProviderError(text, code="auth", status_code=status)
    if status == 404:
        return ProviderError(text, code="unknown_model", status_code=status)
    return ProviderError(text, code=kind or f"http_{status}", status_code=status)


def map_stream_error(provider: str, payload: dict[str, Any]) -> ProviderError:
    """An error delivered inside a 200 stream (`event: error`, `response.failed`, chat `error`)."""
    err = payload.get("error") if isinstance(payload.get("error"), dict) else payload
    if err is None or not isinstance(err, dict):
        err = {"message": str(payload.get("error"))}
    kinds = [str(v) for v in (err.get("type"), err.get("code")) if v and v != "error"]
    kind = kinds[0] if kinds else None
    message = str(err.get("message") or kind or "stream error")
    text = f"{provider}: {message}"
    if any(_retryable_kind(k) for k in kinds):
        return Retryable(text, code=next(k for k in kinds if _retryable_kind(k)))
    if any(p in f"{message} {' '.join(kinds)}".lower() for p in _CONTEXT_PHRASES):
        return ContextTooLong(text)
    return ProviderError(text, code=kind or "stream_error")


def map_transport_error(provider: str, url: str, exc: Exception) -> ProviderError:
    """A failure of Mermaid's own client (`wire.py`) or of httpx (proxies, Bedrock), read alike."""
    url = without_user_info(url)  # a `user:password@` base URL: the message reaches stdout
    kind, detail = _transport_failure(exc)
    if kind == "connect":
        # Nothing listens there: nearly always a wrong base URL, so fail fast and name it.
        return ProviderError(f"{provider}: cannot connect to {url}: {detail}", code="connect")
    if kind == "connect_retry":
        # A reset during the handshake, a DNS blip: transient, retried like a 5xx (as the SDKs do).
        return Retryable(f"{provider}: cannot connect to {url}: {detail}", code="connect_retry")
    if kind == "timeout":
        return Retryable(f"{provider}: request to {url} timed out", code="timeout")
    return Retryable(f"{provider}: connection to {url} failed: {detail}", code="connection")


def _transport_failure(exc: Exception) -> tuple[str, str]:
    """(kind: connect, connect_retry, timeout or connection; what the message says of it)."""
    from mermaid_cli.providers import wire

    if isinstance(exc, wire.ConnectFailed):
        return ("connect" if exc.refused else "connect_retry"), str(exc)
    if isinstance(exc, wire.WireTimeout):
        return "timeout", ""
    if isinstance(exc, wire.WireError):
        return "connection", str(exc)
    import httpx

    if isinstance(exc, httpx.ConnectError) and _refused(exc):
        return "connect", str(exc) or "connection refused"
    if isinstance(exc, httpx.ConnectError):
        return "connect_retry", str(exc) or type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return "timeout", ""
    return "connection", f"{type(exc).__name__}: {exc}"


def without_user_info(url: str) -> str:
    """`url` without the `user:password@` part, for a message."""
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if not sep or "@" not in authority:
        return url
    return f"{scheme}{sep}{authority.rpartition('@')[2]}{slash}{path}"


def _refused(exc: BaseException) -> bool:
    """Whether a connect error is a refused connection (httpx wraps the OSError a few levels deep)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return True
        current = current.__cause__ or current.__context__
    text = str(exc).lower()
    return "connection refused" in text or "errno 111" in text
