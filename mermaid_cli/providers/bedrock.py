"""Claude on Amazon Bedrock (`--model bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0`).

The Messages API as Bedrock serves it: `POST {base}/model/{model id}/invoke-with-response-stream`,
the model in the URL and neither `model` nor `stream` in the body, `anthropic_version:
bedrock-2023-05-31` and the betas (`anthropic_beta: [...]`) in the body instead of headers, and
the reply as AWS event-stream frames (eventstream.py) whose `chunk` events carry one Anthropic
stream event each, base64-encoded. Everything else (prompt caching, thinking, native tools,
fallbacks, the stream state) is the Anthropic client's.

Requests are signed with SigV4 using botocore's default credential chain: `AWS_ACCESS_KEY_ID` /
`AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`, the OIDC web identity CI federates
(`AWS_ROLE_ARN` + `AWS_WEB_IDENTITY_TOKEN_FILE`), `AWS_PROFILE` and the shared files, then the
container and instance metadata. botocore refreshes expiring credentials itself; it is imported
only when a Bedrock request is signed (`pip install 'mermaid-agent[bedrock]'`). With
`AWS_BEARER_TOKEN_BEDROCK` (a Bedrock API key) the request carries `Authorization: Bearer` and
botocore is not needed. The region comes from `AWS_REGION` / `AWS_DEFAULT_REGION` (default
`us-east-1`); `ANTHROPIC_BEDROCK_BASE_URL` replaces `https://bedrock-runtime.{region}.amazonaws.com`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import importlib.util
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from mermaid_cli.core.errors import ProviderError
from mermaid_cli.core.types import ModelTurn, TurnRequest
from mermaid_cli.providers.anthropic import AnthropicProvider, _StreamState
from mermaid_cli.providers.base import TurnSink
from mermaid_cli.providers.errors import (
    Retryable,
    StreamCut,
    map_http_error,
    map_stream_error,
    map_transport_error,
)
from mermaid_cli.providers.eventstream import EventStreamDecoder, Frame
from mermaid_cli.providers.http import Endpoint

if TYPE_CHECKING:
    import httpx

BEDROCK_VERSION = "bedrock-2023-05-31"
DEFAULT_REGION = "us-east-1"
SERVICE = "bedrock"
BEARER_ENV = "AWS_BEARER_TOKEN_BEDROCK"
#: environment values that are credentials: redacted from every output like an API key
SECRET_ENV = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", BEARER_ENV)
INSTALL_HINT = "pip install 'mermaid-agent[bedrock]'"
#: stream exceptions a new attempt can cure (AWS's own retry guidance for InvokeModel*)
_RETRY_EXCEPTIONS = frozenset(
    {
        "throttlingException",
        "serviceUnavailableException",
        "internalServerException",
        "modelStreamErrorException",
        "modelTimeoutException",
        "modelNotReadyException",
    }
)
# `us.anthropic.claude-sonnet-4-5-20250929-v1:0` → `claude-sonnet-4-5-20250929`; the region
# prefix (us., eu., apac., global., ...) is an inference profile, the suffix a Bedrock revision
_BEDROCK_ID = re.compile(r"^(?:[a-z]{2,6}(?:-[a-z]+)?\.)?anthropic\.(?P<model>.+?)(?:-v\d+(?::\d+)?)?$")


def bedrock_region(env: Mapping[str, str]) -> str:
    return (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or DEFAULT_REGION).strip()


def bedrock_base_url(env: Mapping[str, str], region: str) -> str:
    given = env.get("ANTHROPIC_BEDROCK_BASE_URL", "").strip()
    return given or f"https://bedrock-runtime.{region}.amazonaws.com"


def bedrock_secrets(env: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(v for v in (env.get(name, "").strip() for name in SECRET_ENV) if v)


def botocore_installed() -> bool:
    """Whether SigV4 signing is possible, without importing botocore (startup stays light)."""
    return importlib.util.find_spec("botocore") is not None


def table_model(model: str) -> str:
    """The first-party model name of a Bedrock model id or inference-profile ARN, for the table."""
    name = model.rsplit("/", 1)[-1]  # arn:aws:bedrock:...:inference-profile/us.anthropic...
    match = _BEDROCK_ID.match(name)
    return match["model"] if match else name


class _SigV4:
    """SigV4 headers from botocore's default credential chain, resolved once per run; the frozen
    credentials are taken per request so botocore can refresh them before they expire."""

    def __init__(self, region: str, profile: str | None) -> None:
        self.region = region
        self.profile = profile
        self._credentials: Any = None

    @staticmethod
    def _botocore_errors() -> Any:
        try:
            import botocore.exceptions
        except ImportError:
            raise ProviderError(f"bedrock: botocore is not installed: {INSTALL_HINT}", code="auth") from None
        return botocore.exceptions

    def _resolve(self) -> Any:
        """botocore's credentials object (refreshable ones refresh themselves when read)."""
        import botocore.session

        if self._credentials is None:
            self._credentials = botocore.session.Session(profile=self.profile or None).get_credentials()
        if self._credentials is None:
            raise ProviderError(
                "bedrock: no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                f"AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE (OIDC), AWS_PROFILE, or {BEARER_ENV}",
                code="auth",
            )
        return self._credentials

    def source(self) -> str:
        """Which link of the chain has credentials (`env`, `assume-role-with-web-identity`, ...),
        without fetching them."""
        errors = self._botocore_errors()
        try:
            return f"AWS credentials: {self._resolve().method}"
        except errors.BotoCoreError as exc:
            raise ProviderError(f"bedrock: AWS credentials: {exc}", code="auth") from None

    def _sign(self, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        errors = self._botocore_errors()
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        try:
            frozen = self._resolve().get_frozen_credentials()
            request = AWSRequest(method="POST", url=url, headers=headers, data=body)
            SigV4Auth(frozen, SERVICE, self.region).add_auth(request)
        except (errors.ConnectionError, errors.HTTPClientError) as exc:
            # the STS call of a web-identity or assume-role refresh did not get through
            raise Retryable(f"bedrock: cannot refresh AWS credentials: {exc}", code="connect_retry") from None
        except (errors.BotoCoreError, errors.ClientError) as exc:
            raise ProviderError(f"bedrock: AWS credentials: {exc}", code="auth") from None
        return {k: str(v) for k, v in request.headers.items()}

    async def headers(self, url: str, headers: dict[str, str], body: bytes) -> dict[str, str]:
        # off the event loop: a refresh may call STS or read the token file
        return await asyncio.to_thread(self._sign, url, headers, body)


class BedrockAnthropicProvider(AnthropicProvider):
    # the server-side compaction beta is the Claude API's (as on Vertex); not offered here
    SERVER_COMPACTION = False

    def __init__(self, endpoint: Endpoint, *, region: str, profile: str | None = None) -> None:
        super().__init__(endpoint)
        # a Bedrock API key (endpoint.api_key, from AWS_BEARER_TOKEN_BEDROCK) replaces SigV4
        self._sigv4 = None if endpoint.api_key else _SigV4(region, profile)

    def credential_source(self) -> str:
        """What `mermaid doctor` reports; a ProviderError when there are no credentials."""
        return f"env {BEARER_ENV}" if self._sigv4 is None else self._sigv4.source()

    @property
    def url(self) -> str:
        model = quote(self.endpoint.model, safe=":")
        return f"{self.endpoint.base_url.rstrip('/')}/model/{model}/invoke-with-response-stream"

    def build_body(self, request: TurnRequest, *, native: bool | None = None) -> dict[str, Any]:
        body = super().build_body(request, native=native)
        body.pop("model")  # in the URL
        body.pop("stream")  # the endpoint says it
        out: dict[str, Any] = {"anthropic_version": BEDROCK_VERSION}
        betas = self.betas()
        if betas:
            out["anthropic_beta"] = betas
        out.update(body)  # `messages` stays last: the cached prefix is byte-stable
        return out

    def headers(self) -> dict[str, str]:
        headers = super().headers()
        for name in ("anthropic-version", "anthropic-beta", "x-api-key"):
            headers.pop(name, None)  # version and betas are in the body; the key is a bearer token
        headers["accept"] = "application/vnd.amazon.eventstream"
        if self.endpoint.api_key:
            headers["authorization"] = f"Bearer {self.endpoint.api_key}"
        return headers

    async def _attempt(self, body: bytes, sink: TurnSink, headers: dict[str, str]) -> ModelTurn:
        import httpx

        url = self.url
        if self._sigv4 is not None:
            headers = await self._sigv4.headers(url, headers, body)
        state = _StreamState()
        decoder = EventStreamDecoder()
        try:
            async with self._http.client().stream("POST", url, headers=headers, content=body) as response:
                if response.status_code >= 300:
                    raise await _http_error(self.endpoint.provider, response)
                # read to the end (not left at message_stop) so the connection is reused
                async for chunk in response.aiter_bytes():
                    for frame in decoder.feed(chunk):
                        data = frame_event(frame)
                        if data is None or state.done:
                            continue
                        kind = data.get("type")
                        if kind == "error":
                            raise map_stream_error(self.endpoint.provider, data)
                        state.feed(kind, data, sink)
        except httpx.HTTPError as exc:
            raise map_transport_error(self.endpoint.provider, url, exc) from None
        if not state.done:
            raise StreamCut()
        return state.result()


def frame_event(frame: Frame) -> dict[str, Any] | None:
    """The Anthropic stream event a frame carries; a Bedrock exception frame as our error."""
    kind = frame.message_type
    if kind == "exception":
        name = frame.header(":exception-type") or "exception"
        raise stream_exception(name, _message(frame.payload))
    if kind == "error":
        name = frame.header(":error-code") or "error"
        raise stream_exception(name, frame.header(":error-message") or _message(frame.payload))
    if frame.header(":event-type") != "chunk":
        return None  # initial-response and events of later API versions carry nothing we need
    try:
        wrapper = json.loads(frame.payload)
        event = json.loads(base64.b64decode(wrapper["bytes"], validate=True))
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise Retryable(
            f"bedrock: a chunk that is not base64 JSON: {frame.payload[:200]!r}", code="bad_event"
        ) from None
    return event if isinstance(event, dict) else None


def _message(payload: bytes) -> str:
    try:
        data = json.loads(payload)
    except ValueError:
        return payload.decode("utf-8", "replace")[:500]
    if isinstance(data, dict):
        return str(data.get("message") or data.get("Message") or json.dumps(data)[:500])
    return str(data)[:500]


def stream_exception(name: str, message: str) -> ProviderError:
    """A Bedrock stream exception as the Anthropic errors map: transient ones are retried."""
    if name in _RETRY_EXCEPTIONS:
        return Retryable(f"bedrock: {name}: {message}", code=name)
    return map_stream_error("bedrock", {"type": name, "message": f"{name}: {message}"})


async def _http_error(provider: str, response: httpx.Response) -> ProviderError:
    """A non-2xx reply: `{"message": ...}` with the type in `x-amzn-ErrorType`, read as the
    Anthropic error of the same status (429/5xx retried, 401/403 auth, 404 unknown model)."""
    kind = (response.headers.get("x-amzn-errortype") or "").split(":", 1)[0] or None
    message = _message(await response.aread())
    shaped = json.dumps({"error": {"type": kind, "message": f"{kind}: {message}" if kind else message}})
    return map_http_error(provider, response.status_code, shaped, response.headers)
