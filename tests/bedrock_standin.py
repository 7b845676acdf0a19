"""A stand-in for Amazon Bedrock's runtime endpoint (and STS) for the Bedrock provider tests.

`BedrockStandIn` serves `POST /model/{id}/invoke-with-response-stream` as Bedrock does: it checks
the SigV4 `Authorization` header by recomputing it with botocore from the credentials it was
given (or the bearer token of a Bedrock API key) and answers 403 `InvalidSignatureException`
when it does not match, checks the body shape, and relays the conversation to a
`FakeProviderServer` (so every scripted turn and fault of the fake works here), re-framing each
Anthropic SSE event as a binary event-stream `chunk` frame built by `encode_frame` below. Upstream
HTTP errors come back the way Bedrock sends them (`{"message"}` + `x-amzn-ErrorType`), an
in-stream error as an exception frame, a cut stream as a dropped connection. Its own faults
(`add_fault`) answer before the upstream is asked: an exception frame, a frame with a bad CRC,
or a Bedrock HTTP error.

`StsStandIn` answers `AssumeRoleWithWebIdentity` (what botocore calls for OIDC in CI).
"""

from __future__ import annotations

import base64
import collections
import http.client
import json
import socket
import struct
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

VERSION = "bedrock-2023-05-31"
ROUTE_SUFFIX = "/invoke-with-response-stream"
# Anthropic error type -> (Bedrock status, x-amzn-ErrorType), as Bedrock reports the same failure
_HTTP_ERRORS = {
    "rate_limit_error": (429, "ThrottlingException"),
    "overloaded_error": (503, "ServiceUnavailableException"),
    "api_error": (500, "InternalServerException"),
    "authentication_error": (403, "AccessDeniedException"),
    "not_found_error": (404, "ResourceNotFoundException"),
    "invalid_request_error": (400, "ValidationException"),
}
_STREAM_EXCEPTIONS = {"overloaded_error": "serviceUnavailableException"}


def encode_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: string headers (type 7), the payload, both CRCs."""
    raw_headers = b""
    for name, value in headers.items():
        n, v = name.encode(), value.encode()
        raw_headers += bytes([len(n)]) + n + b"\x07" + struct.pack(">H", len(v)) + v
    total = 12 + len(raw_headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw_headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + raw_headers + payload
    return message + struct.pack(">I", zlib.crc32(message))


def chunk_frame(event: dict[str, Any]) -> bytes:
    data = base64.b64encode(json.dumps(event).encode()).decode()
    # Bedrock pads chunks with a `p` field so their sizes say nothing about the text
    payload = json.dumps({"bytes": data, "p": "abcdefghijklmnop"}).encode()
    headers = {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}
    return encode_frame(headers, payload)


def exception_frame(name: str, message: str) -> bytes:
    headers = {":exception-type": name, ":content-type": "application/json", ":message-type": "exception"}
    return encode_frame(headers, json.dumps({"message": message}).encode())


@dataclass(frozen=True)
class AwsKeys:
    access_key: str
    secret_key: str
    token: str | None = None


def verify_sigv4(
    method: str, path: str, headers: dict[str, str], body: bytes, keys: AwsKeys, region: str
) -> str | None:
    """None when `Authorization` is the SigV4 signature of this request, else what is wrong."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    auth = headers.get("authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return f"not a SigV4 Authorization header: {auth[:30]!r}"
    fields = dict(part.strip().split("=", 1) for part in auth[len("AWS4-HMAC-SHA256 ") :].split(","))
    access_key, _date, scope_region, service, _term = fields["Credential"].split("/")
    if (access_key, scope_region, service) != (keys.access_key, region, "bedrock"):
        return f"credential scope {fields['Credential']!r}"
    if keys.token is not None and headers.get("x-amz-security-token") != keys.token:
        return "x-amz-security-token is not the session token"
    signed = fields["SignedHeaders"].split(";")
    request = AWSRequest(
        method=method,
        url=f"http://{headers['host']}{path}",
        headers={h: headers[h] for h in signed if h != "host"},
        data=body,
    )
    request.context["timestamp"] = headers["x-amz-date"]
    signer = SigV4Auth(Credentials(keys.access_key, keys.secret_key, keys.token), "bedrock", region)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    return None if expected == fields["Signature"] else "the signature does not match"


class BedrockStandIn:
    def __init__(
        self,
        upstream_url: str,
        *,
        region: str,
        keys: AwsKeys | None = None,
        bearer: str | None = None,
        upstream_key: str = "sk-upstream",
    ) -> None:
        self.upstream = urlsplit(upstream_url)
        self.region, self.keys, self.bearer, self.upstream_key = region, keys, bearer, upstream_key
        self.requests: list[dict[str, Any]] = []
        self._faults: collections.deque[dict[str, Any]] = collections.deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def add_fault(self, kind: str, **extra: Any) -> None:
        """`exception` (name, message), `corrupt` (a chunk with a bad CRC), `http` (status, name, message)."""
        self._faults.append({"kind": kind, **extra})

    def __enter__(self) -> BedrockStandIn:
        handler = type("Handler", (_Handler,), {"standin": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def check_auth(self, path: str, headers: dict[str, str], body: bytes) -> str | None:
        if self.bearer is not None:
            return None if headers.get("authorization") == f"Bearer {self.bearer}" else "bad bearer token"
        assert self.keys is not None
        return verify_sigv4("POST", path, headers, body, self.keys, self.region)

    def next_fault(self) -> dict[str, Any] | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None


class _Handler(BaseHTTPRequestHandler):
    standin: BedrockStandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _error(self, status: int, name: str, message: str) -> None:
        data = json.dumps({"message": message}).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("x-amzn-errortype", f"{name}:http://internal.amazon.com/coral/com.amazon.bedrock/")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/vnd.amazon.eventstream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        body = json.loads(raw) if raw else {}
        entry: dict[str, Any] = {"path": self.path, "headers": headers, "body": body}
        self.standin.requests.append(entry)
        entry["auth_error"] = problem = self.standin.check_auth(self.path, headers, raw)
        if problem is not None:
            self._error(403, "InvalidSignatureException", f"The request signature is wrong: {problem}")
            return
        if not (self.path.startswith("/model/") and self.path.endswith(ROUTE_SUFFIX)):
            self._error(404, "UnknownOperationException", f"no route {self.path}")
            return
        # the documented version is checked by the tests (the SDK oracle may send a newer one)
        if not body.get("anthropic_version") or "model" in body or "stream" in body:
            self._error(400, "ValidationException", "malformed input request: bad body shape")
            return
        fault = self.standin.next_fault()
        if fault is not None and fault["kind"] == "http":
            self._error(fault["status"], fault["name"], fault["message"])
            return
        if fault is not None:
            self._start()
            if fault["kind"] == "exception":
                self._chunk(exception_frame(fault["name"], fault["message"]))
            else:  # corrupt: a chunk whose last byte (the message CRC) is off by one
                frame = bytearray(chunk_frame({"type": "ping"}))
                frame[-1] ^= 1
                self._chunk(bytes(frame))
            self._end()
            return
        self._relay(unquote(self.path[len("/model/") : -len(ROUTE_SUFFIX)]), body)

    def _relay(self, model: str, body: dict[str, Any]) -> None:
        body = dict(body)  # the logged body stays as it came
        betas = body.pop("anthropic_beta", None)
        body.pop("anthropic_version")
        upstream = {"model": model, "stream": True, **body}
        headers = {
            "content-type": "application/json",
            "x-api-key": self.standin.upstream_key,
            "anthropic-version": "2023-06-01",
        }
        if betas:
            headers["anthropic-beta"] = ",".join(betas)
        host = self.standin.upstream
        conn = http.client.HTTPConnection(host.hostname or "127.0.0.1", host.port, timeout=30)
        try:
            conn.request("POST", "/v1/messages", body=json.dumps(upstream).encode(), headers=headers)
            response = conn.getresponse()
            if response.status != 200:
                error = json.loads(response.read()).get("error", {})
                status, name = _HTTP_ERRORS.get(
                    error.get("type"), (response.status, "InternalServerException")
                )
                self._error(status, name, str(error.get("message")))
                return
            self._start()
            done = False
            for event in _sse_events(response):
                if event.get("type") == "error":
                    kind = event["error"].get("type")
                    name = _STREAM_EXCEPTIONS.get(kind, "modelStreamErrorException")
                    self._chunk(exception_frame(name, str(event["error"].get("message"))))
                    done = True
                    break
                self._chunk(chunk_frame(event))
                done = event.get("type") == "message_stop"
            if done:
                self._end()
            else:
                self._drop()  # the upstream stream was cut: so is ours
        except (http.client.HTTPException, OSError):
            self._drop()
        finally:
            conn.close()


def _sse_events(response: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    data: list[str] = []
    while True:
        line = response.readline()
        if not line:
            return
        text = line.decode().rstrip("\r\n")
        if not text:
            if data:
                yield json.loads("\n".join(data))
            data = []
        elif text.startswith("data:"):
            data.append(text[5:].strip())


@contextmanager
def sts_standin(
    keys: AwsKeys, expected_role: str, expected_token: str
) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """STS's `AssumeRoleWithWebIdentity` (query protocol, XML reply) for a known role and token."""
    calls: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("content-length") or 0)).decode()
            params = dict(parse_qsl(raw))
            calls.append(params)
            ok = params.get("RoleArn") == expected_role and params.get("WebIdentityToken") == expected_token
            if params.get("Action") != "AssumeRoleWithWebIdentity" or not ok:
                data = b"<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"
                data += b"<Message>bad token</Message></Error></ErrorResponse>"
                self.send_response(400)
            else:
                data = (
                    "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
                    f"<AccessKeyId>{keys.access_key}</AccessKeyId><SecretAccessKey>{keys.secret_key}"
                    f"</SecretAccessKey><SessionToken>{keys.token}</SessionToken>"
                    "<Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>"
                    "</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"
                ).encode()
                self.send_response(200)
            self.send_header("content-type", "text/xml")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", calls
    finally:
        server.shutdown()
        server.server_close()
