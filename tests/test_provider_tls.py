"""The provider clients' TLS: an https endpoint verifies against httpx's own trust anchors (built on
a worker thread while the run assembles), an http endpoint loads no CA bundle and can never be
talked into an unverified TLS connection."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from web_servers import Handler, LocalServer, make_cert, server_tls

from mermaid_cli.core.errors import ProviderError
from mermaid_cli.providers.http import HttpTransport
from mermaid_cli.providers.tls import TlsContext


def _ok(handler: Handler) -> None:
    handler.send_text(200, '{"ok": true}', "application/json")


@pytest.fixture
def tls_server(tmp_path: Path):
    cert, key = make_cert(tmp_path, ["127.0.0.1"])
    with LocalServer({"/v1": _ok}, tls=server_tls(cert, key)) as server:
        yield server, cert


def test_an_http_endpoint_loads_no_bundle_and_trusts_nothing(monkeypatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", "/nonexistent/ca.pem")  # would raise if it were loaded
    context = TlsContext("http://127.0.0.1:9/v1").get()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0


async def test_https_verifies_against_ssl_cert_file(tls_server, monkeypatch) -> None:
    server, cert = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    transport = HttpTransport("test", base_url=server.url("/v1"))  # the bundle loads from here on
    try:
        assert await transport.post_json(server.url("/v1"), {}, b"{}") == {"ok": True}
    finally:
        await transport.aclose()


async def test_https_refuses_a_certificate_nothing_vouches_for(tls_server, monkeypatch) -> None:
    server, _cert = tls_server
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    transport = HttpTransport("test", base_url=server.url("/v1"))
    try:
        with pytest.raises(ProviderError):
            await transport.post_json(server.url("/v1"), {}, b"{}")
    finally:
        await transport.aclose()
    assert server.requests == []


async def test_an_http_client_sent_to_https_fails_closed(tls_server, monkeypatch) -> None:
    server, cert = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # even a trusted certificate is not accepted
    transport = HttpTransport("test", base_url="http://127.0.0.1:9/v1")
    try:
        with pytest.raises(ProviderError):
            await transport.post_json(server.url("/v1"), {}, b"{}")
    finally:
        await transport.aclose()
    assert server.requests == []


# a process that starts building an https context (slowly, as a large bundle on a slow disk would)
# and exits at once, never asking for it
EXITS_EARLY = """
import sys, time
from mermaid_cli.providers import tls
def slow():
    time.sleep(0.3)
    open(sys.argv[1], "w").write("built")
    return tls.trustless_context()
tls.verified_context = slow
tls.TlsContext("https://api.example.invalid")
"""


def test_the_exit_waits_for_a_context_being_built(tmp_path: Path) -> None:
    # OpenSSL frees its tables at exit: a CA bundle parsed on the worker meanwhile crashed the
    # process (SIGSEGV in ~1 exit of 50 where a provider was created and never used)
    import subprocess
    import sys

    marker = tmp_path / "built"
    done = subprocess.run(
        [sys.executable, "-c", EXITS_EARLY, str(marker)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "built"  # the worker finished before the process ended
