"""netguard: address classes, URL rules, redirect rules, host allow-lists, DNS pinning."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mermaid_cli.integrations.web.netguard import (
    FetchRefused,
    Target,
    address_refusal,
    check_redirect,
    check_url,
    classify_address,
    host_allowed,
    pinned_transport,
    resolve_and_check,
)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("169.254.10.10", "link-local"),
        ("fe80::1", "link-local"),
        ("169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("100.127.255.254", "carrier-grade NAT"),
        ("224.0.0.1", "multicast"),
        ("233.1.1.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("fc00::1", "private"),
        ("198.18.0.1", "private"),
        ("2001:db8::1", "private"),
    ],
)
def test_non_public_addresses_are_classified(address: str, reason: str) -> None:
    assert classify_address(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:169.254.169.254", "cloud metadata"),
        ("::ffff:100.64.0.1", "carrier-grade NAT"),
        ("::10.0.0.1", "private"),
        ("64:ff9b::a00:1", "private"),
        ("2002:7f00:1::1", "loopback"),
    ],
)
def test_ipv4_inside_ipv6_is_judged_by_the_ipv4_address(address: str, reason: str) -> None:
    assert classify_address(ipaddress.ip_address(address)) == f"{reason} (embedded in IPv6)"


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]
)
def test_public_unicast_addresses_pass(address: str) -> None:
    assert classify_address(ipaddress.ip_address(address)) is None
    assert address_refusal(address, allow_private=False) is None


def test_allow_private_network_lets_private_addresses_through() -> None:
    assert "loopback" in (address_refusal("127.0.0.1", allow_private=False) or "")
    assert address_refusal("127.0.0.1", allow_private=True) is None
    assert address_refusal("169.254.169.254", allow_private=True) is None


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_every_private_ipv4_is_refused_also_when_mapped(value: int) -> None:
    v4 = ipaddress.IPv4Address(value)
    mapped = ipaddress.IPv6Address(f"::ffff:{v4}")
    plain, inner = classify_address(v4), classify_address(mapped)
    assert (plain is None) == (inner is None)
    if not v4.is_global:
        assert plain is not None


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.org/file", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("javascript:alert(1)", "only http and https"),
        ("https://user:pw@example.org/", "credentials"),
        ("https://user@example.org/", "credentials"),
        ("https://@example.org/", "credentials"),
        ("http:///nohost", "no host"),
        ("https://example.org/a\nb", "control characters"),
    ],
)
def test_bad_urls_are_refused(url: str, message: str) -> None:
    with pytest.raises(FetchRefused, match=message):
        check_url(url)


def test_check_url_normalises_host_and_port() -> None:
    t = check_url("https://EXAMPLE.org/Path?q=1")
    assert (t.scheme, t.host, t.port) == ("https", "example.org", 443)
    assert check_url("http://[::1]:8080/").host == "::1"
    assert check_url("http://bücher.example/").host == "xn--bcher-kva.example"


def test_redirect_rules() -> None:
    assert check_redirect("https://a.org/x", "/y", []) == "https://a.org/y"
    assert check_redirect("http://a.org/x", "https://b.org/", []) == "https://b.org/"
    with pytest.raises(FetchRefused, match="https to http"):
        check_redirect("https://a.org/x", "http://a.org/x", [])
    with pytest.raises(FetchRefused, match="loop"):
        check_redirect("https://a.org/x", "/y#frag", ["https://a.org/x", "https://a.org/y"])


def test_host_allowed_matches_domains_and_subdomains() -> None:
    domains = ["docs.python.org", "*.example.com"]
    assert host_allowed("docs.python.org", domains)
    assert host_allowed("api.example.com", domains)
    assert host_allowed("example.com", domains)
    assert not host_allowed("python.org", domains)
    assert not host_allowed("evilexample.com", domains)


async def test_a_name_resolving_to_any_private_address_is_refused() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "10.0.0.5"]

    target = Target(url="http://mixed.test/", scheme="http", host="mixed.test", port=80)
    with pytest.raises(FetchRefused, match="10.0.0.5 is a private"):
        await resolve_and_check(target, allow_private=False, resolver=resolver)


async def test_resolution_happens_once_and_the_first_address_is_pinned() -> None:
    calls: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        calls.append(host)
        return ["93.184.216.34", "2606:2800:220:1::1"]

    target = Target(url="http://site.test/", scheme="http", host="site.test", port=80)
    assert await resolve_and_check(target, allow_private=False, resolver=resolver) == "93.184.216.34"
    assert calls == ["site.test"]


async def test_ip_literals_are_not_resolved() -> None:
    async def resolver(host: str, port: int) -> list[str]:
        raise AssertionError("must not resolve a literal")

    target = check_url("http://169.254.169.254/latest/meta-data/")
    with pytest.raises(FetchRefused, match="cloud metadata"):
        await resolve_and_check(target, allow_private=False, resolver=resolver)


async def test_system_resolver_resolves_localhost_to_loopback_and_it_is_refused() -> None:
    with pytest.raises(FetchRefused, match="loopback"):
        await resolve_and_check(check_url("http://localhost:9/"), allow_private=False)


@pytest.mark.parametrize(
    "url",
    [
        "http://0x7f000001/",
        "http://2130706433/",
        "http://127.1/",
        "http://0/",
        "http://[::ffff:7f00:1]/",
        "http://[0:0:0:0:0:ffff:169.254.169.254]/",
    ],
)
async def test_obfuscated_internal_hosts_are_refused(url: str) -> None:
    with pytest.raises(FetchRefused, match="address; only public addresses may be fetched"):
        await resolve_and_check(check_url(url), allow_private=False)


async def test_pinned_transport_connects_only_to_pinned_hosts() -> None:
    import httpx
    from web_servers import LocalServer, page_routes

    pins: dict[tuple[str, int], str] = {}
    with LocalServer(page_routes({})) as srv:
        async with httpx.AsyncClient(transport=pinned_transport(pins)) as client:
            with pytest.raises(httpx.ConnectError, match="unchecked host"):
                await client.get(srv.url("/echo-host"))
            assert srv.requests == []
            # A made-up name works once pinned: the connection goes to the pinned address and
            # the Host header keeps the name.
            pins[("docs.invalid", srv.port)] = "127.0.0.1"
            response = await client.get(f"http://docs.invalid:{srv.port}/echo-host")
            assert response.text == f"host=docs.invalid:{srv.port}"
