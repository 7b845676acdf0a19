"""Mermaid's own HTTP/1.1 client for the model APIs (`providers/wire.py`), against real sockets served
by scripted asyncio servers: every body framing, kept-alive connections (and a stale one replaced
without a trace), cut and malformed responses as clear transport errors, and a configured proxy
honoured (through httpx)."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from mermaid_cli.core.errors import ProviderError
from mermaid_cli.providers.errors import Retryable
from mermaid_cli.providers.http import HttpTransport, proxy_configured
from mermaid_cli.providers.wire import ConnectionLost, WireClient, WireTimeout

SSE = b'event: a\ndata: {"n": 1}\n\nevent: b\ndata: {"n": 2}\n\n'
Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter, list[bytes]], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> bytes | None:
    """One request (head and Content-Length body) as bytes; None when the client went away."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    return head + await reader.readexactly(length)


@asynccontextmanager
async def serve(script: Script) -> AsyncIterator[tuple[str, list[bytes], list[int]]]:
    """A server on 127.0.0.1 that runs `script` per connection; yields (base URL, requests seen,
    connections accepted)."""
    requests: list[bytes] = []
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections) + 1)
        try:
            await script(reader, writer, requests)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", requests, connections
    finally:
        server.close()
        await server.wait_closed()


def answer(*responses: bytes, keep_open: bool = True) -> Script:
    """Answer each request on a connection with the next of `responses`, then wait or close."""

    async def script(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, requests: list[bytes]
    ) -> None:
        for response in responses:
            request = await read_request(reader)
            if request is None:
                return
            requests.append(request)
            writer.write(response)
            await writer.drain()
        if keep_open:
            await reader.read()  # until the client closes

    return script


def chunked(body: bytes, size: int = 7) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def head(status: str = "200 OK", **headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status}"] + [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def client(**kwargs: float) -> WireClient:
    import ssl

    return WireClient(
        lambda: ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT),
        timeout=kwargs.get("timeout", 5.0),
        connect_timeout=kwargs.get("connect_timeout", 5.0),
        user_agent="Mermaid/test",
    )


async def lines_of(wire: WireClient, url: str, body: bytes = b"{}") -> tuple[int, list[str]]:
    async with wire.request("POST", url + "/v1/x", {"content-type": "application/json"}, body) as response:
        return response.status, [line async for batch in response.line_batches() for line in batch]


async def connections_for_two_requests(script) -> int:  # type: ignore[no-untyped-def]
    """Two requests answered in full by `script`: how many connections they took."""
    async with serve(script) as (url, _, connections):
        wire = client()
        assert await lines_of(wire, url) == (200, EXPECTED_LINES)
        assert await lines_of(wire, url) == (200, EXPECTED_LINES)
        await wire.aclose()
    return len(connections)


EXPECTED_LINES = ["event: a", 'data: {"n": 1}', "", "event: b", 'data: {"n": 2}', ""]


@pytest.mark.parametrize(
    "response",
    [
        head(content_type="text/event-stream", transfer_encoding="chunked") + chunked(SSE),
        head(content_type="text/event-stream", content_length=str(len(SSE))) + SSE,
        head(
            content_type="text/event-stream",
            content_encoding="gzip",
            content_length=str(len(gzip.compress(SSE))),
        )
        + gzip.compress(SSE),
        head(content_type="text/event-stream", transfer_encoding="chunked")
        + chunked(SSE.replace(b"\n", b"\r\n"), size=1),
    ],
    ids=["chunked", "content-length", "gzip", "crlf-one-byte-chunks"],
)
async def test_every_body_framing_gives_the_same_lines(response: bytes) -> None:
    async with serve(answer(response)) as (url, requests, _):
        wire = client()
        status, lines = await lines_of(wire, url)
        await wire.aclose()
    assert status == 200 and lines == EXPECTED_LINES
    request = requests[0].decode()
    assert request.startswith("POST /v1/x HTTP/1.1\r\n")
    assert f"host: {url.removeprefix('http://')}\r\n" in request.lower()
    assert "content-length: 2\r\n" in request.lower() and request.endswith("\r\n\r\n{}")
    assert "user-agent: Mermaid/test" in request


async def test_a_body_delimited_by_the_close_is_read_to_the_end_and_not_reused() -> None:
    async def script(reader, writer, requests):  # type: ignore[no-untyped-def]
        requests.append(await read_request(reader))
        writer.write(head(content_type="text/event-stream") + SSE)
        await writer.drain()
        writer.close()

    assert await connections_for_two_requests(script) == 2


async def test_bytes_past_a_chunked_response_keep_its_connection_from_reuse() -> None:
    ok = head(transfer_encoding="chunked") + chunked(SSE) + b"HTTP/1.1 200 OK\r\n"
    assert await connections_for_two_requests(answer(ok, ok)) == 2


async def test_one_connection_serves_every_request_of_a_run() -> None:
    ok = head(content_length=str(len(SSE))) + SSE
    async with serve(answer(ok, ok, ok)) as (url, requests, connections):
        wire = client()
        for _ in range(3):
            assert await lines_of(wire, url) == (200, EXPECTED_LINES)
        await wire.aclose()
    assert len(requests) == 3 and len(connections) == 1


async def test_concurrent_requests_leave_one_idle_connection_and_close_the_other() -> None:
    ok = head(content_length=str(len(SSE))) + SSE
    async with serve(answer(ok, ok)) as (url, _, connections):
        wire = client()
        assert await asyncio.gather(lines_of(wire, url), lines_of(wire, url)) == [(200, EXPECTED_LINES)] * 2
        kept = list(wire._idle.values())
        assert len(connections) == 2 and len(kept) == 1 and kept[0].usable
        await wire.aclose()
        assert kept[0].writer.is_closing()


async def test_a_kept_connection_the_server_dropped_is_replaced_silently() -> None:
    """The server closes a kept connection as the next request arrives, without a byte of answer:
    the request goes out again on a new connection, once, and the caller sees one answer."""
    ok = head(content_length=str(len(SSE))) + SSE

    async def script(reader, writer, requests):  # type: ignore[no-untyped-def]
        if len(requests) == 0:
            await answer(ok, keep_open=False)(reader, writer, requests)
            requests.append(await read_request(reader))  # read, then hang up unanswered
            return
        await answer(ok)(reader, writer, requests)

    async with serve(script) as (url, requests, connections):
        wire = client()
        assert await lines_of(wire, url) == (200, EXPECTED_LINES)
        assert await lines_of(wire, url) == (200, EXPECTED_LINES)
        await wire.aclose()
    assert len(connections) == 2 and len(requests) == 3


async def test_a_kept_connection_cut_after_part_of_a_head_is_an_error_not_a_resend() -> None:
    """Once a byte of the answer came, the server had the request: it is never sent twice."""
    ok = head(content_length=str(len(SSE))) + SSE

    async def script(reader, writer, requests):  # type: ignore[no-untyped-def]
        await answer(ok, keep_open=False)(reader, writer, requests)
        requests.append(await read_request(reader))
        writer.write(b"HTTP/1.1 200")
        await writer.drain()

    async with serve(script) as (url, requests, connections):
        wire = client()
        assert await lines_of(wire, url) == (200, EXPECTED_LINES)
        with pytest.raises(ConnectionLost, match="middle of a response head"):
            await lines_of(wire, url)
        await wire.aclose()
    assert len(connections) == 1 and len(requests) == 2


async def test_a_fresh_connection_closed_unanswered_is_an_error_not_a_resend() -> None:
    async def script(reader, writer, requests):  # type: ignore[no-untyped-def]
        requests.append(await read_request(reader))

    async with serve(script) as (url, requests, connections):
        wire = client()
        with pytest.raises(ConnectionLost, match="without a response"):
            await lines_of(wire, url)
        await wire.aclose()
    assert len(connections) == 1 and len(requests) == 1


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (head(content_length="100") + b"short", "short of its Content-Length"),
        (head(transfer_encoding="chunked") + b"10\r\nabc", "cut inside a chunk"),
        (head(transfer_encoding="chunked") + b"zz\r\n", "malformed chunk size"),
        (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.1 response"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "malformed response header"),
        (head(content_encoding="br", content_length="3") + b"abc", "did not ask for"),
    ],
    ids=["short", "cut-chunk", "bad-chunk-size", "not-http", "bad-header", "unasked-encoding"],
)
async def test_a_broken_response_is_a_connection_error(response: bytes, message: str) -> None:
    async with serve(answer(response, keep_open=False)) as (url, _, _):
        wire = client()
        with pytest.raises(ConnectionLost, match=message):
            await lines_of(wire, url)
        await wire.aclose()


async def test_a_silent_server_times_out() -> None:
    async def script(reader, writer, requests):  # type: ignore[no-untyped-def]
        requests.append(await read_request(reader))
        await asyncio.sleep(5)

    async with serve(script) as (url, _, _):
        wire = client(timeout=0.2)
        with pytest.raises(WireTimeout):
            await lines_of(wire, url)
        await wire.aclose()


async def test_a_header_with_a_line_break_is_refused_before_anything_is_sent() -> None:
    async with serve(answer(head(content_length="0"))) as (url, requests, connections):
        wire = client()
        with pytest.raises(Exception, match="line break"):
            async with wire.request("POST", url + "/v1/x", {"x-evil": "a\r\nx-injected: 1"}, b"{}"):
                pass
        await wire.aclose()
    assert requests == [] and connections == []


async def test_an_interim_response_is_skipped() -> None:
    response = b"HTTP/1.1 100 Continue\r\n\r\n" + head(content_length=str(len(SSE))) + SSE
    async with serve(answer(response)) as (url, _, _):
        wire = client()
        assert await lines_of(wire, url) == (200, EXPECTED_LINES)
        await wire.aclose()


async def test_the_transport_maps_statuses_and_refusals_like_before() -> None:
    error = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}).encode()
    response = head("529 Overloaded", content_type="application/json", content_length=str(len(error))) + error
    async with serve(answer(response)) as (url, _, _):
        transport = HttpTransport("anthropic", base_url=url)
        with pytest.raises(Retryable, match="busy"):
            async for _ in transport.stream_events(url + "/v1/messages", {}, b"{}"):
                pass
        await transport.aclose()
    transport = HttpTransport("anthropic", base_url=url)  # the server is gone: refused, final
    with pytest.raises(ProviderError) as refused:
        async for _ in transport.stream_events(url + "/v1/messages", {}, b"{}"):
            pass
    await transport.aclose()
    assert refused.value.code == "connect" and not isinstance(refused.value, Retryable)


async def test_a_name_whose_every_address_refuses_is_a_final_connect_error() -> None:
    """`localhost` may name ::1 and 127.0.0.1; both refusing is still "nothing listens there"."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    transport = HttpTransport("openai", base_url=f"http://localhost:{port}/v1")
    with pytest.raises(ProviderError) as refused:
        async for _ in transport.stream_events(f"http://localhost:{port}/v1/chat", {}, b"{}"):
            pass
    await transport.aclose()
    assert refused.value.code == "connect" and not isinstance(refused.value, Retryable)


async def test_user_info_in_the_url_is_sent_as_basic_auth_never_as_part_of_the_target() -> None:
    import base64

    ok = head(content_length=str(len(SSE))) + SSE
    async with serve(answer(ok)) as (url, requests, _):
        wire = client()
        with_user = url.replace("http://", "http://me:s%40cret@")
        assert await lines_of(wire, with_user) == (200, EXPECTED_LINES)
        await wire.aclose()
    request = requests[0].decode()
    assert f"authorization: Basic {base64.b64encode(b'me:s@cret').decode()}\r\n" in request
    assert "s%40cret" not in request and "me:" not in request.split("\r\n")[0]


async def test_a_failed_connection_never_names_the_urls_password() -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://me:hunter2-secret@127.0.0.1:{port}/v1"
    transport = HttpTransport("openai", base_url=url)
    with pytest.raises(ProviderError) as refused:
        async for _ in transport.stream_events(url + "/chat", {}, b"{}"):
            pass
    await transport.aclose()
    assert "hunter2" not in str(refused.value) and f"http://127.0.0.1:{port}/v1/chat" in str(refused.value)


async def test_a_url_with_a_bad_port_is_a_clear_final_error() -> None:
    wire = client()
    with pytest.raises(Exception, match="port is not a number") as caught:
        async with wire.request("POST", "http://127.0.0.1:http/v1", {}, b"{}"):
            pass
    assert getattr(caught.value, "refused", False)


def test_only_a_named_proxy_counts_as_configured() -> None:
    assert not proxy_configured({"NO_PROXY": "127.0.0.1,localhost"})
    assert proxy_configured({"HTTPS_PROXY": "http://proxy:3128"})
    assert proxy_configured({"all_proxy": "socks5://proxy:1080"})
    assert not proxy_configured({"HTTP_PROXY": ""})


async def test_a_configured_proxy_carries_the_request(monkeypatch) -> None:
    """With HTTP_PROXY set the request goes to the proxy in absolute form (httpx speaks it)."""
    ok = head(content_type="text/event-stream", content_length=str(len(SSE))) + SSE
    async with serve(answer(ok)) as (proxy_url, requests, _):
        monkeypatch.setenv("HTTP_PROXY", proxy_url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        transport = HttpTransport("openai", base_url="http://model.invalid/v1")
        events = [e async for e in transport.stream_events("http://model.invalid/v1/chat", {}, b"{}")]
        await transport.aclose()
    assert [e.event for e in events] == ["a", "b"]
    assert requests[0].startswith(b"POST http://model.invalid/v1/chat HTTP/1.1\r\n")
