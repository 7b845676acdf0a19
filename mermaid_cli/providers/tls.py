"""The TLS context a provider's HTTP client verifies with, built off the path to the first request.

Loading the CA bundle is most of what creating an httpx client costs (issue 23). For an `https://`
endpoint it starts on a worker thread when the provider is created, while the run is still
assembling (OpenSSL releases the GIL while it parses the bundle), and the client takes the result
when the first request goes out. The trust anchors are httpx's own choice: `SSL_CERT_FILE`,
then `SSL_CERT_DIR`, then certifi.

An `http://` endpoint (a local model server, a test fake) needs no anchors: its client gets a
context that still requires a verified certificate but trusts none, so an HTTPS connection it
might be sent to fails closed instead of going out unverified.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl


def verified_context() -> ssl.SSLContext:
    """What httpx's `verify=True` builds (with `trust_env`): the CA bundle it would load."""
    import ssl

    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def trustless_context() -> ssl.SSLContext:
    """Certificate and host name checks on, no trust anchors: every TLS handshake fails."""
    import ssl

    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class TlsContext:
    """The context for clients of `base_url`, prepared in the background when it needs anchors."""

    def __init__(self, base_url: str) -> None:
        self.plain = base_url.lower().startswith("http://")
        self._context: ssl.SSLContext | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if not self.plain:
            # not a daemon: the interpreter's exit waits for it. OpenSSL frees its tables at exit
            # (OPENSSL_cleanup), and a bundle still being parsed then crashed the process
            # (SIGSEGV, ~1 exit in 50 when a provider was created and never used). `mermaid exec`
            # ends with os._exit, which runs no cleanup and waits for nothing
            self._thread = threading.Thread(target=self._build, name="mermaid-tls", daemon=False)
            self._thread.start()

    def _build(self) -> None:
        try:
            self._context = verified_context()
        except BaseException as exc:  # raised again, on the caller's thread, by get()
            self._error = exc

    def get(self) -> ssl.SSLContext:
        if self.plain:
            return trustless_context()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        if self._context is None:
            self._context = verified_context()
        return self._context
