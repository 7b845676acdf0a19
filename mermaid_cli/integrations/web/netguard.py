"""Where `web_fetch` may connect: URL checks, address classes, DNS pinning, redirect rules.

The security property: every connection goes to an address we resolved and checked ourselves.
The host name is resolved once per hop, every address it resolves to must be public unicast, and
the connection is made to that exact address (the pinned network backend below refuses any
host it was not told about), while the Host header and TLS SNI/certificate check keep the
original name. A later DNS answer (rebinding) therefore can never redirect the connection.

httpx/httpcore are imported inside functions: `mermaid --help` must not pay for them.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
#: resolves (host, port) to the addresses a connection could use
Resolver = Callable[[str, int], Awaitable[list[str]]]

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_V4_MULTICAST = ipaddress.ip_network("224.0.0.0/4")


class FetchRefused(Exception):
    """A destination or redirect the fetch policy does not allow. The message is for the model."""


def classify_address(ip: IPAddress) -> str | None:
    """Why `ip` is not a public unicast destination, or None when it is."""
    if isinstance(ip, ipaddress.IPv6Address):
        # Addresses that carry an IPv4 address inside are judged by that address.
        embedded = ip.ipv4_mapped or _ipv4_compatible(ip) or _nat64(ip) or ip.sixtofour
        if embedded is None and ip.teredo is not None:
            embedded = ip.teredo[1]
        if embedded is not None:
            reason = classify_address(embedded)
            return f"{reason} (embedded in IPv6)" if reason else None
    if ip in _METADATA:
        return "cloud metadata"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_multicast or (isinstance(ip, ipaddress.IPv4Address) and ip in _V4_MULTICAST):
        return "multicast"
    if isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT:
        return "carrier-grade NAT"
    if ip.is_reserved and isinstance(ip, ipaddress.IPv4Address):
        return "reserved"
    if ip.is_private:
        return "private"
    if ip.is_reserved:
        return "reserved"
    if isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local:
        return "site-local"
    if not ip.is_global:
        return "not globally routable"
    return None


def _ipv4_compatible(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    # Deprecated ::a.b.c.d form; `::` and `::1` are handled as unspecified/loopback.
    value = int(ip)
    if value >> 32 == 0 and value > 1:
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return None


def _nat64(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_refusal(address: str, *, allow_private: bool) -> str | None:
    """The refusal message for connecting to `address`, or None when allowed."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"{address!r} is not an IP address"
    reason = classify_address(ip)
    if reason is None or allow_private:
        return None
    article = "an" if reason[0] in "aeiou" else "a"
    return f"destination {ip} is {article} {reason} address; only public addresses may be fetched"


@dataclass(frozen=True)
class Target:
    """A checked URL: what to connect to (`host`, `port`) and how (`scheme`)."""

    url: str
    scheme: str
    host: str  # as httpcore will pass it to the network backend (lowercase, no brackets)
    port: int


def check_url(url: str) -> Target:
    """Parse `url` and apply the static rules (scheme, userinfo, host). Raises FetchRefused."""
    import httpx

    if any(ch in url for ch in "\r\n\t") or not url.isprintable():
        raise FetchRefused("the URL contains control characters")
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        raise FetchRefused(f"invalid URL: {exc}") from None
    scheme = parsed.scheme
    if scheme not in ("http", "https"):
        raise FetchRefused(f"only http and https URLs can be fetched, not {scheme or 'a relative URL'!r}")
    # urlsplit sees a bare "@" too, which httpx reports as empty userinfo.
    if parsed.userinfo or "@" in (urlsplit(url).netloc or ""):
        raise FetchRefused("URLs with credentials (user:password@host) are not fetched")
    host = parsed.raw_host.decode("ascii").lower().strip("[]")
    if not host:
        raise FetchRefused("the URL has no host")
    port = parsed.port or (443 if scheme == "https" else 80)
    return Target(url=str(parsed), scheme=scheme, host=host, port=port)


def check_redirect(current: str, location: str, seen: Iterable[str]) -> str:
    """The absolute URL a redirect leads to, after the redirect rules. Raises FetchRefused."""
    import httpx

    try:
        nxt = httpx.URL(current).join(location.strip())
    except (httpx.InvalidURL, ValueError) as exc:
        raise FetchRefused(f"invalid redirect location: {exc}") from None
    if httpx.URL(current).scheme == "https" and nxt.scheme == "http":
        raise FetchRefused(f"refused redirect from https to http ({_origin(nxt)})")
    target = str(nxt.copy_with(fragment=None))
    if target in {str(httpx.URL(s).copy_with(fragment=None)) for s in seen}:
        raise FetchRefused(f"redirect loop detected at {_origin(nxt)}")
    return target


def _origin(url: Any) -> str:
    return f"{url.scheme}://{url.host}"


async def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for `host` (A and AAAA), in its order."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        addr = str(sockaddr[0])
        if addr not in seen:
            seen.append(addr)
    return seen


async def resolve_and_check(
    target: Target,
    *,
    allow_private: bool,
    resolver: Resolver | None = None,
    extra_public: frozenset[str] = frozenset(),
) -> str:
    """Resolve `target.host` and return the address to pin. Every resolved address must pass:
    a name that also points at a private address is refused rather than partly trusted."""
    try:
        literal = ipaddress.ip_address(target.host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            addresses = await (resolver or system_resolver)(target.host, target.port)
        except OSError as exc:
            raise FetchRefused(f"could not resolve {target.host}: {exc.strerror or exc}") from None
        if not addresses:
            raise FetchRefused(f"could not resolve {target.host}")
    for address in addresses:
        if address in extra_public:
            continue
        refusal = address_refusal(address, allow_private=allow_private)
        if refusal:
            raise FetchRefused(f"{target.host}: {refusal}")
    return addresses[0]


def host_allowed(host: str, allowed_domains: Iterable[str]) -> bool:
    """Whether `host` is one of `allowed_domains` or a subdomain of one (`*.x.org` = `x.org`)."""
    host = host.lower().rstrip(".")
    for domain in allowed_domains:
        d = domain.lower().strip().rstrip(".").removeprefix("*.")
        if d and (host == d or host.endswith("." + d)):
            return True
    return False


# ---- the pinned connection ---------------------------------------------------------------------


def pinned_transport(pins: Mapping[tuple[str, int], str], *, ssl_context: Any = None) -> Any:
    """An httpx async transport that connects only to pinned addresses.

    `pins` maps (host, port) to the checked address; it may be updated between requests (one
    entry per redirect hop). TLS still uses the host name for SNI and certificate checks because
    httpcore starts TLS with the origin's host, not the address we connected to."""
    import httpcore
    import httpx

    if ssl_context is None:
        ssl_context = _default_ssl_context()

    class PinnedBackend(httpcore.AsyncNetworkBackend):
        def __init__(self) -> None:
            self._inner = httpcore.AnyIOBackend()

        async def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> Any:
            address = pins.get((host.lower().strip("[]"), port))
            if address is None:
                raise httpcore.ConnectError(f"refusing to connect to unchecked host {host}:{port}")
            return await self._inner.connect_tcp(
                address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
            )

        async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
            raise httpcore.ConnectError("unix sockets are not used for web fetches")

        async def sleep(self, seconds: float) -> None:
            await self._inner.sleep(seconds)

    transport = httpx.AsyncHTTPTransport(verify=ssl_context, trust_env=False)
    # httpx has no public hook for the network backend; its pool is rebuilt with ours. Same
    # settings as httpx's default pool, no proxy (proxies would see and resolve the name).
    transport._pool = httpcore.AsyncConnectionPool(ssl_context=ssl_context, network_backend=PinnedBackend())
    return transport


def _default_ssl_context() -> Any:
    import ssl

    import certifi

    return ssl.create_default_context(cafile=certifi.where())
