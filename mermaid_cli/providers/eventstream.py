"""The AWS event-stream framing (`application/vnd.amazon.eventstream`) Bedrock streams replies in.

A frame is: a prelude (total length and headers length, u32 big-endian, then the CRC32 of those
8 bytes), the headers (name length u8, name, value type u8, value), the payload, and the CRC32
of everything before it. `EventStreamDecoder` takes bytes as they arrive and yields whole frames.
A frame whose lengths or checksums do not check is a `Retryable` provider error, never an
exception of ours: after one bad length nothing later in the stream can be trusted, and a fresh
request is the only way back.

Our own decoder (rather than botocore's) so the bearer-token mode needs no botocore at all.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from mermaid_cli.providers.errors import Retryable

_PRELUDE = 12  # total length, headers length, prelude CRC
_TRAILER = 4  # message CRC
#: botocore's limits: a frame larger than these is a broken stream, not a big event
MAX_HEADERS_LENGTH = 128 * 1024
MAX_PAYLOAD_LENGTH = 24 * 1024 * 1024

HeaderValue = bool | int | bytes | str | uuid.UUID


class CorruptFrame(Retryable):
    def __init__(self, detail: str) -> None:
        super().__init__(f"bedrock: corrupt event-stream frame ({detail})", code="bad_event")


@dataclass(frozen=True)
class Frame:
    """One AWS event-stream frame: its headers and payload."""

    headers: dict[str, HeaderValue] = field(default_factory=dict)
    payload: bytes = b""

    def header(self, name: str) -> str | None:
        value = self.headers.get(name)
        return value if isinstance(value, str) else None

    @property
    def message_type(self) -> str:
        return self.header(":message-type") or "event"


#: the fixed-size header value types (byte, short, integer, long, timestamp)
_FIXED = {
    2: struct.Struct(">b"),
    3: struct.Struct(">h"),
    4: struct.Struct(">i"),
    5: struct.Struct(">q"),
    8: struct.Struct(">q"),
}


def _header_value(data: bytes, pos: int, kind: int) -> tuple[HeaderValue, int]:
    if kind in (0, 1):
        return kind == 0, pos
    fixed = _FIXED.get(kind)
    if fixed is not None:
        (number,) = fixed.unpack_from(data, pos)
        return int(number), pos + fixed.size
    if kind in (6, 7):
        (length,) = struct.unpack_from(">H", data, pos)
        raw = data[pos + 2 : pos + 2 + length]
        if len(raw) != length:
            raise CorruptFrame("a header value runs past the headers")
        return (raw if kind == 6 else raw.decode("utf-8")), pos + 2 + length
    if kind == 9:
        raw = data[pos : pos + 16]
        if len(raw) != 16:
            raise CorruptFrame("a uuid header is short")
        return uuid.UUID(bytes=raw), pos + 16
    raise CorruptFrame(f"unknown header value type {kind}")


def parse_headers(data: bytes) -> dict[str, HeaderValue]:
    headers: dict[str, HeaderValue] = {}
    pos = 0
    try:
        while pos < len(data):
            length = data[pos]
            name = data[pos + 1 : pos + 1 + length].decode("utf-8")
            pos += 1 + length
            kind = data[pos]
            headers[name], pos = _header_value(data, pos + 1, kind)
    except (IndexError, struct.error, UnicodeDecodeError):
        raise CorruptFrame("the headers do not parse") from None
    return headers


class EventStreamDecoder:
    """Frames from a byte stream fed in arbitrary pieces."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> Iterator[Frame]:
        self._buffer += chunk
        while len(self._buffer) >= _PRELUDE:
            total, headers_length, prelude_crc = struct.unpack_from(">III", self._buffer, 0)
            if zlib.crc32(self._buffer[:8]) != prelude_crc:
                raise CorruptFrame("the prelude CRC does not match")
            if headers_length > MAX_HEADERS_LENGTH:
                raise CorruptFrame(f"headers of {headers_length} bytes")
            payload_length = total - _PRELUDE - headers_length - _TRAILER
            if payload_length < 0 or payload_length > MAX_PAYLOAD_LENGTH:
                raise CorruptFrame(f"a frame of {total} bytes with {headers_length} bytes of headers")
            if len(self._buffer) < total:
                return
            frame = bytes(self._buffer[:total])
            del self._buffer[:total]
            (message_crc,) = struct.unpack_from(">I", frame, total - _TRAILER)
            if zlib.crc32(frame[: total - _TRAILER]) != message_crc:
                raise CorruptFrame("the message CRC does not match")
            start = _PRELUDE + headers_length
            yield Frame(parse_headers(frame[_PRELUDE:start]), frame[start : total - _TRAILER])

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame still buffered (a stream that ends here was cut)."""
        return len(self._buffer)
