"""Claude on Google Vertex AI (`--model vertex/claude-sonnet-4-5@20250929`).

The Messages API as Vertex serves it: `POST {base}/v1/projects/{project}/locations/{region}/
publishers/anthropic/models/{model}:streamRawPredict`, the model in the URL rather than the body,
`anthropic_version: vertex-2023-10-16` in the body, and an OAuth bearer token in place of an API
key. Everything else (prompt caching, thinking, native tools, fallbacks, the stream) is the
Anthropic client's.

The token comes from google-auth's default chain: `GOOGLE_APPLICATION_CREDENTIALS` (a service
account, or the workload-identity-federation file CI writes for OIDC), then the gcloud user
credentials, then the metadata server. google-auth is imported only when a Vertex model runs
(`pip install 'mermaid-agent[vertex]'`). The project comes from `ANTHROPIC_VERTEX_PROJECT_ID` /
`GOOGLE_CLOUD_PROJECT` (or the credentials), the region from `CLOUD_ML_REGION` (default
`us-east5`); `ANTHROPIC_VERTEX_BASE_URL` replaces `https://{region}-aiplatform.googleapis.com`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from mermaid_cli.core.errors import ProviderError
from mermaid_cli.core.types import ModelTurn, TurnRequest
from mermaid_cli.providers.anthropic import AnthropicProvider
from mermaid_cli.providers.base import TurnSink
from mermaid_cli.providers.http import Endpoint

VERTEX_VERSION = "vertex-2023-10-16"
DEFAULT_REGION = "us-east5"
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
#: refresh a token this many seconds before it expires
_EARLY = 300.0


def vertex_location(env: Mapping[str, str]) -> tuple[str | None, str]:
    """(project or None, region) from the environment."""
    project = env.get("ANTHROPIC_VERTEX_PROJECT_ID") or env.get("GOOGLE_CLOUD_PROJECT") or None
    return project, env.get("CLOUD_ML_REGION") or DEFAULT_REGION


def vertex_base_url(env: Mapping[str, str], region: str) -> str:
    given = env.get("ANTHROPIC_VERTEX_BASE_URL", "").strip()
    return given or f"https://{region}-aiplatform.googleapis.com"


def _request_adapter() -> Any:
    """google-auth's HTTP callable over the standard library (its own adapters need `requests`)."""
    import urllib.error
    import urllib.request

    from google.auth import exceptions, transport

    class Response(transport.Response):
        def __init__(self, status: int, headers: Mapping[str, str], data: bytes) -> None:
            self._status, self._headers, self._data = status, dict(headers), data

        @property
        def status(self) -> int:
            return self._status

        @property
        def headers(self) -> Mapping[str, str]:
            return self._headers

        @property
        def data(self) -> bytes:
            return self._data

    class Request(transport.Request):
        def __call__(
            self,
            url: str,
            method: str = "GET",
            body: bytes | None = None,
            headers: Mapping[str, str] | None = None,
            timeout: float | None = None,
            **_kwargs: Any,
        ) -> Response:
            req = urllib.request.Request(url, data=body, headers=dict(headers or {}), method=method)
            try:
                with urllib.request.urlopen(req, timeout=timeout or 60) as resp:  # noqa: S310 - token URLs
                    return Response(resp.status, dict(resp.headers.items()), resp.read())
            except urllib.error.HTTPError as exc:
                return Response(exc.code, dict(exc.headers.items()), exc.read())
            except OSError as exc:
                raise exceptions.TransportError(str(exc)) from exc

    return Request()


class _Token:
    """An OAuth access token from google-auth, refreshed (off the event loop) before it expires."""

    def __init__(self) -> None:
        self._credentials: Any = None
        self.project: str | None = None
        self._value: str | None = None
        self._expires = 0.0

    def _refresh(self) -> tuple[str, float]:
        try:
            import google.auth
            from google.auth.exceptions import GoogleAuthError
        except ImportError:
            raise ProviderError(
                "vertex: google-auth is not installed: pip install 'mermaid-agent[vertex]'", code="auth"
            ) from None
        try:
            if self._credentials is None:
                self._credentials, self.project = google.auth.default(scopes=[SCOPE])
            self._credentials.refresh(_request_adapter())
        except GoogleAuthError as exc:
            raise ProviderError(f"vertex: no Google credentials: {exc}", code="auth") from None
        expiry = getattr(self._credentials, "expiry", None)
        left = (expiry.timestamp() - time.time()) if expiry is not None else 3600.0
        return str(self._credentials.token), time.monotonic() + left

    async def get(self) -> str:
        if self._value is None or time.monotonic() >= self._expires - _EARLY:
            value, self._expires = await asyncio.to_thread(self._refresh)
            self._value = value
            return value
        return self._value


class VertexAnthropicProvider(AnthropicProvider):
    SERVER_COMPACTION = False  # the compaction beta is the Claude API's; not offered here

    def __init__(self, endpoint: Endpoint, *, project: str | None, region: str) -> None:
        super().__init__(endpoint)
        self.project = project
        self.region = region
        self._token = _Token()
        self._bearer: str | None = None

    @property
    def url(self) -> str:
        project = self.project or self._token.project
        if not project:
            raise ProviderError(
                "vertex: no project: set ANTHROPIC_VERTEX_PROJECT_ID or GOOGLE_CLOUD_PROJECT", code="auth"
            )
        base = self.endpoint.base_url.rstrip("/")
        return (
            f"{base}/v1/projects/{project}/locations/{self.region}/publishers/anthropic/models/"
            f"{self.endpoint.model}:streamRawPredict"
        )

    def build_body(self, request: TurnRequest, *, native: bool | None = None) -> dict[str, Any]:
        body = super().build_body(request, native=native)
        body.pop("model")  # in the URL on Vertex
        return {"anthropic_version": VERTEX_VERSION, **body}

    def headers(self) -> dict[str, str]:
        headers = super().headers()
        headers.pop("anthropic-version", None)  # in the body on Vertex
        if self._bearer is not None:
            headers["authorization"] = f"Bearer {self._bearer}"
        return headers

    async def turn(self, request: TurnRequest, sink: TurnSink) -> ModelTurn:
        self._bearer = await self._token.get()
        return await super().turn(request, sink)
