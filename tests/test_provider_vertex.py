"""Claude on Google Vertex AI against local fakes: a real google-auth token refresh (an
service-account key file whose token endpoint is a local server) and the fake provider
serving `:streamRawPredict`; google-auth is imported only when a Vertex model runs."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from provider_fixtures import FakeProviderServer, RecordingSink, text, turn

from mermaid_cli.config.sections.providers import ProviderToolsSettings
from mermaid_cli.core.errors import ProviderError
from mermaid_cli.core.types import Message, TurnRequest
from mermaid_cli.providers.resolve import create_provider, model_facts
from mermaid_cli.providers.vertex import VertexAnthropicProvider

pytest.importorskip("google.auth")

TOKEN = "ya29.fake-vertex-token"
MODEL = "vertex/claude-sonnet-4-5@20250929"
SETTINGS = types.SimpleNamespace(
    providers={}, pricing={}, models={}, tools=ProviderToolsSettings(), model=None
)


@contextmanager
def token_server() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """Google's OAuth token endpoint, as google-auth's service-account (JWT bearer) grant calls it."""
    grants: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            from urllib.parse import parse_qsl

            raw = self.rfile.read(int(self.headers.get("content-length", "0"))).decode()
            grants.append(dict(parse_qsl(raw)))
            data = json.dumps({"access_token": TOKEN, "expires_in": 3600, "token_type": "Bearer"}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/token", grants
    finally:
        server.shutdown()
        server.server_close()


def _credentials(tmp_path: Path, token_uri: str) -> Path:
    """A service-account key file (a fresh RSA key) whose token endpoint is the local server."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    path = tmp_path / "sa.json"
    info = {
        "type": "service_account",
        "project_id": "sa-project",
        "private_key_id": "1",
        "private_key": pem,
        "client_email": "ci@sa-project.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": token_uri,
    }
    path.write_text(json.dumps(info))
    return path


def _request() -> TurnRequest:
    return TurnRequest(system="s", messages=(Message.user_text("hi"),))


async def test_vertex_sends_the_bearer_token_and_the_vertex_body(tmp_path, monkeypatch) -> None:
    with (
        token_server() as (token_uri, grants),
        FakeProviderServer([turn(text("one")), turn(text("two"))]) as server,
    ):
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(_credentials(tmp_path, token_uri)))
        env = {
            "ANTHROPIC_VERTEX_BASE_URL": server.url,
            "CLOUD_ML_REGION": "europe-west1",
        }
        provider = create_provider(MODEL, SETTINGS, env)  # type: ignore[arg-type]
        assert isinstance(provider, VertexAnthropicProvider)
        first = await provider.turn(_request(), RecordingSink())
        second = await provider.turn(_request(), RecordingSink())
        await provider.aclose()
        requests = list(server.requests)
    assert first.message.text == "one" and second.message.text == "two"
    # one signed JWT grant for both turns (the token is reused until it nears expiry)
    assert len(grants) == 1 and grants[0]["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert grants[0]["assertion"].count(".") == 2
    for request in requests:
        assert request["path"] == (
            "/v1/projects/sa-project/locations/europe-west1/publishers/anthropic/models/"
            "claude-sonnet-4-5@20250929:streamRawPredict"
        )
        assert request["headers"]["authorization"] == f"Bearer {TOKEN}"
        assert "x-api-key" not in request["headers"] and "anthropic-version" not in request["headers"]
        body = request["body"]
        assert body["anthropic_version"] == "vertex-2023-10-16" and "model" not in body
    # the model plans with the Anthropic row of the same model
    assert model_facts(MODEL, SETTINGS).family == "Claude Sonnet 4.5"  # type: ignore[arg-type]


async def test_vertex_without_credentials_is_a_clear_auth_error(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    env = {"ANTHROPIC_VERTEX_PROJECT_ID": "p"}
    provider = create_provider(MODEL, SETTINGS, env)  # type: ignore[arg-type]
    with pytest.raises(ProviderError) as caught:
        await provider.turn(_request(), RecordingSink())
    await provider.aclose()
    assert caught.value.code == "auth" and "Google credentials" in caught.value.message


def test_google_auth_is_imported_only_for_vertex() -> None:
    code = (
        "import sys, types\n"
        "from mermaid_cli.providers.resolve import create_provider\n"
        "from mermaid_cli.config.sections.providers import ProviderToolsSettings\n"
        "s = types.SimpleNamespace(providers={}, pricing={}, models={}, tools=ProviderToolsSettings(), model=None)\n"
        "create_provider('anthropic/claude-sonnet-4-5', s, {'ANTHROPIC_API_KEY': 'k'})\n"
        "create_provider('vertex/claude-sonnet-4-5@20250929', s, {'ANTHROPIC_VERTEX_PROJECT_ID': 'p'})\n"
        "assert 'google.auth' not in sys.modules, 'imported before a request'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
