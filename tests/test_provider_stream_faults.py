"""Failures as the real services and compatible servers send them, from real local servers:
repeated tool names, error chunks with 5xx codes, connection resets, rejection texts."""

from __future__ import annotations

import json
import socket
import ssl
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from provider_fixtures import RecordingSink

from mermaid_cli.core.errors import ProviderError
from mermaid_cli.core.types import Message, TextBlock, ToolCallBlock, ToolSpec, TurnRequest
from mermaid_cli.providers.anthropic import AnthropicProvider
from mermaid_cli.providers.http import Endpoint
from mermaid_cli.providers.openai_chat import OpenAIChatProvider

#: one scripted response: (status, SSE data chunks) or (status, JSON error body)
Response = tuple[int, list[dict[str, Any]] | dict[str, Any]]

TEXT_OK: Response = (
    200,
    [{"choices": [{"delta": {"content": "fine"}}]}, {"choices": [{"delta": {}, "finish_reason": "stop"}]}],
)


@contextmanager
def scripted(responses: list[Response]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A real HTTP server answering POSTs with `responses` in order; yields (base URL, bodies)."""
    bodies: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            bodies.append(json.loads(self.rfile.read(int(self.headers.get("content-length", "0")))))
            status, payload = responses[min(len(bodies), len(responses)) - 1]
            self.send_response(status)
            if isinstance(payload, dict):
                raw = json.dumps(payload).encode()
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
                return
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for chunk in payload:
                event = f"event: {chunk['type']}\n" if "type" in chunk else ""
                self.wfile.write(f"{event}data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()


def chat(base: str, **kw: Any) -> OpenAIChatProvider:
    return OpenAIChatProvider(Endpoint(provider="groq", model="m", base_url=base + "/v1", api_key="k", **kw))


def request(**kw: Any) -> TurnRequest:
    return TurnRequest(system="s", messages=(Message.user_text("hi"),), **kw)


async def test_a_tool_name_repeated_in_every_chunk_is_not_doubled() -> None:
    def piece(**fn: str) -> dict[str, Any]:
        return {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c1", "function": fn}]}}]}

    chunks = [
        piece(name="read_file"),
        piece(name="read_file", arguments='{"pa'),
        piece(name="read_file", arguments='th":"a"}'),
        {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]},
    ]
    with scripted([(200, chunks)]) as (base, _):
        provider = chat(base)
        turn = await provider.turn(request(), RecordingSink())
        await provider.aclose()
    assert turn.content == (ToolCallBlock(id="c1", name="read_file", arguments={"path": "a"}),)
    assert turn.stop_reason == "tool_use"


@pytest.mark.parametrize(
    "error",
    [
        {"code": 502, "message": "upstream provider returned 502"},
        {"code": "503", "message": "service unavailable"},
        {"code": "server_is_overloaded", "message": "the server is overloaded"},
    ],
)
async def test_an_error_chunk_with_a_5xx_code_or_overload_is_retried(error: dict[str, Any]) -> None:
    with scripted([(200, [{"error": error}]), TEXT_OK]) as (base, bodies):
        provider = chat(base)
        sink = RecordingSink()
        turn = await provider.turn(request(), sink)
        await provider.aclose()
    assert turn.content == (TextBlock(text="fine"),) and len(bodies) == 2
    assert len(sink.retries) == 1


async def test_a_client_error_chunk_is_final() -> None:
    with scripted([(200, [{"error": {"code": 400, "message": "bad request"}}]), TEXT_OK]) as (base, bodies):
        provider = chat(base)
        with pytest.raises(ProviderError):
            await provider.turn(request(), RecordingSink())
        await provider.aclose()
    assert len(bodies) == 1


@contextmanager
def resetting_tls_port() -> Iterator[tuple[int, list[int]]]:
    """A port that accepts TCP and resets it during the TLS handshake (a connect-phase reset)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    accepted: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            accepted.append(1)
            conn.recv(1024)  # the ClientHello
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()  # RST

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], accepted
    finally:
        stop.set()
        thread.join()
        listener.close()


async def test_a_reset_while_connecting_is_retried_with_backoff() -> None:
    assert ssl.HAS_SNI  # the client speaks TLS to https://127.0.0.1
    with resetting_tls_port() as (port, accepted):
        provider = chat(f"https://127.0.0.1:{port}", deadline=time.monotonic() + 3)
        sink = RecordingSink()
        with pytest.raises(ProviderError) as caught:
            await provider.turn(request(), sink)
        await provider.aclose()
    assert sink.retries and all(code == "connect_retry" for _, code in sink.retries)
    assert len(accepted) == len(sink.retries) + 1 and caught.value.code == "connect_retry"


async def test_a_refused_connection_fails_fast() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    provider = chat(f"http://127.0.0.1:{port}")
    sink = RecordingSink()
    with pytest.raises(ProviderError) as caught:
        await provider.turn(request(), sink)
    assert caught.value.code == "connect" and sink.retries == []


@contextmanager
def unanswered_port() -> Iterator[int]:
    """A port whose accept queue is full: further SYNs are dropped, so connecting times out."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket()
        filler.setblocking(False)
        try:
            filler.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(filler)
    try:
        yield port
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


async def test_a_connect_timeout_is_retried_with_backoff() -> None:
    with unanswered_port() as port:
        provider = chat(f"http://127.0.0.1:{port}", deadline=time.monotonic() + 3, connect_timeout=0.3)
        sink = RecordingSink()
        with pytest.raises(ProviderError) as caught:
            await provider.turn(request(), sink)
        await provider.aclose()
    assert sink.retries and all(code == "timeout" for _, code in sink.retries)
    assert "no time left to retry" in caught.value.message or "gave up" in caught.value.message


async def test_a_dns_failure_is_retried_with_backoff() -> None:
    provider = chat("http://mermaid-no-such-host.invalid", deadline=time.monotonic() + 2)
    sink = RecordingSink()
    with pytest.raises(ProviderError) as caught:
        await provider.turn(request(), sink)
    await provider.aclose()
    assert sink.retries and all(code == "connect_retry" for _, code in sink.retries)
    assert caught.value.code == "connect_retry" and "mermaid-no-such-host.invalid" in caught.value.message


def _spec(name: str) -> ToolSpec:
    return ToolSpec(name=name, description=name, input_schema={"type": "object", "properties": {}})


TOOLS = tuple(_spec(n) for n in ("read_file", "write_file", "edit_file", "execute_command"))


async def test_native_fallback_only_on_the_real_rejection_text() -> None:
    other_400: Response = (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "tools.3.name: String should match pattern",
            },
        },
    )
    with scripted([other_400]) as (base, bodies):
        provider = AnthropicProvider(
            Endpoint(provider="anthropic", model="claude-sonnet-4-5", base_url=base, api_key="k")
        )
        with pytest.raises(ProviderError):
            await provider.turn(request(tools=TOOLS), RecordingSink())
        await provider.aclose()
    # a 400 about some tool is not the native tools being refused: no second request, no fallback
    assert len(bodies) == 1 and not provider.native_rejected
    offered = [t["type"] for t in bodies[0]["tools"] if "type" in t]
    rejection: Response = (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": f"tools.0: Input tag '{offered[0]}' found using 'type' does not match any of the expected tags",
            },
        },
    )
    ok = (
        200,
        [
            {"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 1}}},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "ok"}},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
            {"type": "message_stop"},
        ],
    )
    with scripted([rejection, ok]) as (base, bodies):
        provider = AnthropicProvider(
            Endpoint(provider="anthropic", model="claude-sonnet-4-5", base_url=base, api_key="k")
        )
        turn = await provider.turn(request(tools=TOOLS), RecordingSink())
        await provider.aclose()
    assert turn.content == (TextBlock(text="ok"),) and provider.native_rejected
    assert all("type" not in t for t in bodies[1]["tools"])
