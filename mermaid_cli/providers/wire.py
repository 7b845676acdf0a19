"""A small HTTP/1.1 client for the model APIs, on asyncio streams: what the provider clients need and
nothing more (issue 23: httpx costs a run ~150 M instructions of imports before its first request).

One kept-alive connection per origin; a request goes out as one write (head and body); a response
body is read by `Content-Length`, chunked, or until the server closes, and gzip/deflate bodies are
decoded. TLS uses the context `providers/tls.py` prepared. A connection that sat idle and turns out
closed before the server sent a single byte is replaced once, silently (the server never saw the
request); anything later is the caller's to retry. Proxies are not spoken here: with a proxy
configured, `HttpTransport` uses httpx.

Every failure is a `WireError`: `ConnectFailed` (refused, or no connection/TLS handshake),
`WireTimeout` (connecting, or waiting for the server), or `ConnectionLost` (reset, cut, or a response
that is not HTTP/1.1).
"""

from __future__ import annotations

import asyncio
import codecs
import sys
import zlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from mermaid_cli.providers import early
from mermaid_cli.providers.http1 import ConnectFailed, Origin, WireError, frame

if TYPE_CHECKING:  # `ssl` loads with the first TLS context (cli/lazy_ssl.py): plain http never needs it
    import ssl

#: the longest response head (status line and headers) accepted
MAX_HEAD = 64 * 1024
#: bytes asked of the socket per read
CHUNK = 64 * 1024


class WireTimeout(WireError):
    pass


class ConnectionLost(WireError):
    pass


class _Stale(Exception):
    """A reused connection that was already closed: nothing of the request reached a server."""


class Connection:
    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, reusable: bool = True
    ) -> None:
        self.reader, self.writer = reader, writer
        #: False for an early request's relayed TLS connection: it carries one response only
        self.reusable = reusable

    @property
    def usable(self) -> bool:
        return not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


class Response:
    """A response whose body is read once, as bytes (`read`) or as text lines (`line_batches`)."""

    def __init__(self, status: int, headers: dict[str, str], body: AsyncIterator[bytes]) -> None:
        self.status = status
        #: lower-cased names; a repeated header's values joined with ", "
        self.headers = headers
        self._body = body
        self.complete = False

    async def read(self) -> bytes:
        data = b"".join([chunk async for chunk in self._body])
        self.complete = True
        return data

    async def line_batches(self) -> AsyncIterator[list[str]]:
        """Text lines (UTF-8), split at \\r\\n, \\n or \\r as httpx's `aiter_lines` splits them,
        as the lines each read of the body completed (a streamed response is read a few events at
        a time: one step per read, not per line)."""
        decoder = _utf8()
        pending = ""
        async for chunk in self._body:
            text = pending + decoder.decode(chunk)
            held = text.endswith("\r")  # maybe the first half of a \r\n split across chunks
            *done, pending = _split_lines(text[:-1] if held else text)
            pending += "\r" if held else ""
            if done:
                yield done
        self.complete = True
        rest = [line for line in _split_lines(pending + decoder.decode(b"", final=True)) if line]
        if rest:
            yield rest


def _split_lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _utf8() -> codecs.IncrementalDecoder:
    return codecs.getincrementaldecoder("utf-8")("replace")


class WireClient:
    """Requests to any origin over kept-alive connections (one idle connection per origin)."""

    def __init__(
        self, tls: Callable[[], ssl.SSLContext], *, timeout: float, connect_timeout: float, user_agent: str
    ) -> None:
        self._tls = tls
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._user_agent = user_agent
        self._idle: dict[Origin, Connection] = {}

    @asynccontextmanager
    async def request(
        self, method: str, url: str, headers: dict[str, str], body: bytes
    ) -> AsyncIterator[Response]:
        origin, data = frame(method, url, headers, body, self._user_agent)
        conn = self._idle.pop(origin, None)
        if conn is not None and not conn.usable:
            conn.close()
            conn = None
        taken = await early.claim(method, url, headers, body, self._user_agent, origin, data)
        try:
            if taken is not None:  # this very request already went out at start (`early.py`)
                sock, reusable = taken
                if conn is not None:
                    self._idle[origin] = conn
                reader, writer = await asyncio.open_connection(sock=sock, limit=MAX_HEAD)
                conn = Connection(reader, writer, reusable=reusable)
                response = await self._exchange(conn, None, reused=False)
            elif conn is not None:
                try:
                    response = await self._exchange(conn, data, reused=True)
                except _Stale:
                    conn.close()
                    conn = None
            if conn is None:
                conn = await self._connect(origin)
                response = await self._exchange(conn, data, reused=False)
        except BaseException:
            if conn is not None:
                conn.close()
            raise
        try:
            yield response
        except BaseException:
            conn.close()
            raise
        if (
            response.complete
            and _keeps_alive(response)
            and conn.usable
            and conn.reusable
            and origin not in self._idle
        ):
            self._idle[origin] = conn
        else:
            conn.close()  # one idle connection per origin: a second one (concurrent requests) closes

    async def _connect(self, origin: Origin) -> Connection:
        scheme, host, port = origin
        context = self._tls() if scheme == "https" else None
        try:
            async with asyncio.timeout(self._connect_timeout):
                reader, writer = await asyncio.open_connection(
                    host,
                    port,
                    ssl=context,
                    server_hostname=host if context is not None else None,
                    limit=MAX_HEAD,
                    # a name with IPv6 and IPv4 addresses: the next address is tried after 250 ms
                    # (RFC 8305), not after a black-holed IPv6 connect times out
                    happy_eyeballs_delay=0.25,
                )
        except TimeoutError:
            raise WireTimeout(f"no connection within {self._connect_timeout:g}s") from None
        except ConnectionRefusedError as exc:
            raise ConnectFailed(str(exc) or "connection refused", refused=True) from None
        except OSError as exc:  # (ssl.SSLError among them)
            # every address of a name refused: asyncio reports them as one "Multiple exceptions"
            refused = not _tls_error(exc) and "[Errno 111]" in str(exc)
            raise ConnectFailed(str(exc) or type(exc).__name__, refused=refused) from None
        return Connection(reader, writer)

    async def _exchange(self, conn: Connection, data: bytes | None, *, reused: bool) -> Response:
        """Send `data` (None: it went out already) and read the response head."""
        try:
            async with asyncio.timeout(self._timeout):
                try:
                    if data is not None:
                        conn.writer.write(data)
                        await conn.writer.drain()
                except OSError:  # (ssl.SSLError among them)
                    if reused:
                        raise _Stale from None  # the server had closed it: nothing was read
                    raise
                while True:
                    status, headers = await _read_head(conn.reader, reused=reused)
                    if status >= 200 or status == 101:
                        break
                    reused = False  # a 1xx interim response: the final one follows
        except _Stale:
            raise
        except TimeoutError:
            raise WireTimeout("timed out waiting for the response") from None
        except OSError as exc:  # (ssl.SSLError among them)
            raise ConnectionLost(f"{type(exc).__name__}: {exc}") from None
        ack_promptly(conn.writer.get_extra_info("socket"))
        return Response(status, headers, self._body(conn, status, headers))

    async def _body(self, conn: Connection, status: int, headers: dict[str, str]) -> AsyncIterator[bytes]:
        decode = _decoder(headers.get("content-encoding", ""))
        try:
            if status in (204, 304) or 100 <= status < 200:
                return
            if "chunked" in headers.get("transfer-encoding", "").lower():
                raw = _chunked(conn.reader, self._timeout, headers)
            elif "content-length" in headers:
                raw = _sized(conn.reader, _length(headers["content-length"]), self._timeout)
            else:
                headers["connection"] = "close"  # delimited by the close: never reused
                raw = _until_close(conn.reader, self._timeout)
            async for chunk in raw:
                out = decode(chunk) if decode is not None else chunk
                if out:
                    yield out
        except TimeoutError:
            raise WireTimeout("timed out reading the response") from None
        except (OSError, zlib.error) as exc:  # (ssl.SSLError is an OSError)
            raise ConnectionLost(f"{type(exc).__name__}: {exc}") from None

    async def aclose(self) -> None:
        idle, self._idle = self._idle, {}
        for conn in idle.values():
            conn.close()


def _tls_error(exc: BaseException) -> bool:
    """A TLS failure (none can have happened where `ssl` was never imported)."""
    ssl = sys.modules.get("ssl")
    return ssl is not None and isinstance(exc, ssl.SSLError)


def ack_promptly(sock: object) -> None:
    """ACK each part of a response body as soon as it is read. On a reused connection the kernel
    sees a request/response rhythm and delays its ACKs (up to 40 ms); a server that leaves Nagle
    on (Python's http.server, local model servers, the benchmarks' fake model) then sends each SSE
    event only once the previous one is ACKed: ~40 ms on every turn, the last one (the exit)
    included. TCP_QUICKACK leaves that mode until we send again (Linux only)."""
    import socket

    quickack = getattr(socket, "TCP_QUICKACK", None)
    if sock is not None and quickack is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)  # type: ignore[attr-defined]
        except OSError:  # not TCP (a Unix socket proxy): nothing to delay
            pass


async def _read_head(reader: asyncio.StreamReader, *, reused: bool) -> tuple[int, dict[str, str]]:
    # The first byte alone: a kept connection that ends (or resets) before it never carried this
    # request to a server, so it may be sent again; once a byte has come, it may not.
    try:
        first = await reader.read(1)
    except OSError:  # (ssl.SSLError among them)
        if reused:
            raise _Stale from None
        raise
    if not first:
        if reused:
            raise _Stale
        raise ConnectionLost("the server closed the connection without a response")
    try:
        raw = first + await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        raise ConnectionLost("the server closed the connection in the middle of a response head") from None
    except asyncio.LimitOverrunError:
        raise ConnectionLost(f"the response head is over {MAX_HEAD} bytes") from None
    lines = raw.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code = rest.partition(" ")[0]
    if not version.startswith("HTTP/1.") or not code.isdigit() or len(code) != 3:
        raise ConnectionLost(f"not an HTTP/1.1 response: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise ConnectionLost(f"a malformed response header: {line[:80]!r}")
        key, value = name.strip().lower(), value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    if version == "HTTP/1.0" and "keep-alive" not in headers.get("connection", "").lower():
        headers["connection"] = "close"
    return int(code), headers


def _keeps_alive(response: Response) -> bool:
    return "close" not in response.headers.get("connection", "").lower()


def _length(value: str) -> int:
    try:
        length = int(value.split(",")[0].strip())
    except ValueError:
        raise ConnectionLost(f"a malformed Content-Length: {value[:40]!r}") from None
    if length < 0:
        raise ConnectionLost(f"a malformed Content-Length: {value[:40]!r}")
    return length


async def _sized(reader: asyncio.StreamReader, length: int, timeout: float) -> AsyncIterator[bytes]:
    left = length
    while left > 0:
        async with asyncio.timeout(timeout):
            chunk = await reader.read(min(CHUNK, left))
        if not chunk:
            raise ConnectionLost(f"the response ended {left} bytes short of its Content-Length")
        left -= len(chunk)
        yield chunk


class _Feed:
    """The socket's bytes in one buffer, read a block at a time: a chunked body's framing is parsed
    from what has arrived (most reads carry several small chunks, one per streamed event), so a
    timeout is armed per socket read, not three per chunk."""

    def __init__(self, reader: asyncio.StreamReader, timeout: float) -> None:
        self.reader, self.timeout, self.buf = reader, timeout, bytearray()

    async def more(self, where: str) -> None:
        async with asyncio.timeout(self.timeout):
            data = await self.reader.read(CHUNK)
        if not data:
            raise ConnectionLost(f"the response was cut {where}")
        self.buf += data

    async def line(self, where: str) -> bytes:
        while (end := self.buf.find(b"\n")) < 0:
            if len(self.buf) > MAX_HEAD:
                raise ConnectionLost("a chunk header is too long")
            await self.more(where)
        line = bytes(self.buf[:end])
        del self.buf[: end + 1]
        return line.rstrip(b"\r")


async def _chunked(
    reader: asyncio.StreamReader, timeout: float, headers: dict[str, str]
) -> AsyncIterator[bytes]:
    feed = _Feed(reader, timeout)
    while True:
        size_line = await feed.line("between chunks")
        try:
            size = int(size_line.split(b";")[0].strip(), 16)
        except ValueError:
            raise ConnectionLost(f"a malformed chunk size: {size_line[:40]!r}") from None
        if size == 0:
            while await feed.line("in the trailers"):  # up to the blank line
                pass
            if feed.buf:
                headers["connection"] = "close"  # bytes past the response: never reused
            return
        left = size
        while left > 0:
            if not feed.buf:
                await feed.more("inside a chunk")
            piece = bytes(feed.buf[:left])
            del feed.buf[: len(piece)]
            left -= len(piece)
            yield piece
        if await feed.line("after a chunk"):
            raise ConnectionLost("a chunk is longer than its size says")


async def _until_close(reader: asyncio.StreamReader, timeout: float) -> AsyncIterator[bytes]:
    while True:
        async with asyncio.timeout(timeout):
            chunk = await reader.read(CHUNK)
        if not chunk:
            return
        yield chunk


def _decoder(encoding: str) -> Callable[[bytes], bytes] | None:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(zlib.MAX_WBITS | 16).decompress
    if encoding == "deflate":
        return zlib.decompressobj().decompress
    raise ConnectionLost(f"the response uses an encoding Mermaid did not ask for: {encoding!r}")
