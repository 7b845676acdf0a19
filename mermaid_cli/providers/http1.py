"""HTTP/1.1 request framing: a URL's origin and request target, and the request head. Stdlib only:
the early first request (`early.py`) frames its request with these before asyncio is imported,
byte for byte as `WireClient` would."""

from __future__ import annotations

from urllib.parse import urlsplit

#: an origin: (scheme, host, port)
Origin = tuple[str, str, int]


class WireError(Exception):
    """A transport failure (the message never carries a request header)."""


class ConnectFailed(WireError):
    def __init__(self, message: str, *, refused: bool) -> None:
        super().__init__(message)
        self.refused = refused


def parse_url(url: str) -> tuple[Origin, str, str, str | None]:
    """(origin, request target, Host header, Basic credentials of a `user:password@` URL)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise ConnectFailed("the URL's port is not a number", refused=True) from None
    if scheme not in ("http", "https") or not parts.hostname:
        raise ConnectFailed("not an http(s) URL", refused=True)
    host = parts.hostname
    shown = f"[{host}]" if ":" in host else host
    host_header = shown if parts.port is None else f"{shown}:{port}"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    credentials = None
    if parts.username is not None:  # as httpx did: the URL's user info becomes Basic auth
        import base64
        from urllib.parse import unquote

        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        credentials = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    return (scheme, host, port), target, host_header, credentials


def request_head(
    method: str, target: str, host: str, headers: dict[str, str], length: int, user_agent: str
) -> bytes:
    given = {k.lower() for k in headers}
    lines = [f"{method} {target} HTTP/1.1", f"host: {host}"]
    defaults = {
        "accept": "*/*",
        "accept-encoding": "gzip, deflate",
        "connection": "keep-alive",
        "user-agent": user_agent,
    }
    lines += [f"{k}: {v}" for k, v in defaults.items() if k not in given]
    for name, value in headers.items():
        if name.lower() in ("host", "content-length", "transfer-encoding"):
            continue
        if any(c in f"{name}{value}" for c in "\r\n\0"):
            raise ConnectFailed(f"header {name!r} holds a line break", refused=True)
        lines.append(f"{name}: {value}")
    lines.append(f"content-length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")


def frame(
    method: str, url: str, headers: dict[str, str], body: bytes, user_agent: str
) -> tuple[Origin, bytes]:
    """(origin, the request's bytes: head and body, sent as one write). A URL's user info becomes
    Basic auth unless the headers authorize already."""
    origin, target, host, credentials = parse_url(url)
    if credentials is not None and not any(k.lower() == "authorization" for k in headers):
        headers = {**headers, "authorization": credentials}
    return origin, request_head(method, target, host, headers, len(body), user_agent) + body


def is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def base_url_problem(url: str) -> str | None:
    """Why `url` may not be a provider's base URL, or None. Only https leaves the machine: a key
    sent over http to a remote host is a leaked key."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return f"base URL {url!r} is not an http(s) URL"
    if parts.scheme not in ("http", "https") or not host:
        return f"base URL {url!r} is not an http(s) URL"
    if parts.scheme == "http" and not is_loopback(host):
        return f"base URL {url!r} must use https (plain http is only allowed for localhost)"
    return None
