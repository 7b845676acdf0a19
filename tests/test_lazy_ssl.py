"""asyncio loaded without `ssl` (`cli/lazy_ssl.py`): a plain-http exchange never loads it, and
once anything imports `ssl`, every way Mermaid opens TLS through asyncio still works. Each case
runs in a fresh interpreter (this one loaded asyncio with `ssl` long ago)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.web_servers import Handler, LocalServer, make_cert, server_tls

ROOT = Path(__file__).resolve().parents[1]

# plain http first, then https through the provider client, a STARTTLS-style upgrade of a plain
# asyncio stream, and httpx (which imports `ssl` itself)
PROBE = """
import json, sys
from mermaid_cli.cli.lazy_ssl import import_asyncio
import_asyncio()
seen = {"after_import": "ssl" in sys.modules or "_ssl" in sys.modules}
import asyncio
from mermaid_cli.providers.tls import verified_context
from mermaid_cli.providers.wire import WireClient

async def main():
    client = WireClient(verified_context, timeout=10, connect_timeout=10, user_agent="t")
    async with client.request("POST", sys.argv[1] + "/v1", {}, b"{}") as response:
        seen["http"] = (await response.read()).decode()
    seen["after_http"] = "ssl" in sys.modules
    async with client.request("POST", sys.argv[2] + "/v1", {}, b"{}") as response:
        seen["https"] = (await response.read()).decode()
    await client.aclose()
    host, port = sys.argv[2].removeprefix("https://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    await writer.start_tls(verified_context(), server_hostname=host)
    writer.write(b"POST /v1 HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 0\\r\\nConnection: close\\r\\n\\r\\n")
    seen["upgraded"] = (await reader.read()).decode().rsplit("\\r\\n", 1)[-1]
    writer.close()
    import httpx
    async with httpx.AsyncClient(verify=verified_context()) as http:
        seen["httpx"] = (await http.post(sys.argv[2] + "/v1")).text
    ssl = sys.modules["ssl"]
    holders = [sys.modules["asyncio." + name] for name in ("base_events", "selector_events", "sslproto")]
    seen["handed_over"] = all(m.ssl is ssl for m in holders) and holders[2].SSLAgainErrors == (
        ssl.SSLWantReadError, ssl.SSLSyscallError
    )

asyncio.run(main())
print(json.dumps(seen))
"""


def _ok(handler: Handler) -> None:
    handler.send_text(200, "ok", "text/plain")


def _probe(script: str, *args: str, **env: str) -> dict[str, object]:
    full = {k: v for k, v in os.environ.items() if not k.endswith("_proxy") and not k.endswith("_PROXY")}
    full.update(env)
    proc = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120, env=full, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return result


def test_plain_http_never_loads_ssl_and_tls_still_works_once_it_does(tmp_path: Path) -> None:
    cert, key = make_cert(tmp_path, ["127.0.0.1"])
    with LocalServer({"/v1": _ok}) as plain, LocalServer({"/v1": _ok}, tls=server_tls(cert, key)) as tls:
        seen = _probe(PROBE, plain.url(""), tls.url(""), SSL_CERT_FILE=str(cert))
    assert seen == {
        "after_import": False,
        "http": "ok",
        "after_http": False,  # a whole plain-http exchange without OpenSSL's libssl
        "https": "ok",
        "upgraded": "ok",
        "httpx": "ok",
        "handed_over": True,
    }


def test_an_asyncio_of_another_shape_gets_ssl_at_once() -> None:
    script = (
        "import json, sys\n"
        "from mermaid_cli.cli import lazy_ssl\n"
        "lazy_ssl.HOLDERS = frozenset({'asyncio.base_events'})  # not what this asyncio does\n"
        "lazy_ssl.import_asyncio()\n"
        "import asyncio.sslproto, ssl\n"
        "print(json.dumps({'loaded': 'ssl' in sys.modules, 'proto': asyncio.sslproto.ssl is ssl,\n"
        "    'finder': any(type(f).__name__ == '_HandOver' for f in sys.meta_path)}))\n"
    )
    assert _probe(script) == {"loaded": True, "proto": True, "finder": False}


def test_with_ssl_already_loaded_asyncio_loads_as_usual() -> None:
    script = (
        "import json, ssl, sys\n"
        "from mermaid_cli.cli.lazy_ssl import import_asyncio\n"
        "import_asyncio()\n"
        "import asyncio.sslproto\n"
        "print(json.dumps({'proto': asyncio.sslproto.ssl is ssl,\n"
        "    'finder': any(type(f).__name__ == '_HandOver' for f in sys.meta_path)}))\n"
    )
    assert _probe(script) == {"proto": True, "finder": False}


@pytest.mark.skipif(sys.platform != "linux", reason="the run's own sandbox and orphan guard are Linux's")
def test_a_plain_http_run_loads_no_ssl(tmp_path: Path) -> None:
    """The whole `mermaid exec` against a model on plain http: OpenSSL's libssl is never loaded
    (`-X importtime` lists every module the process imported)."""
    from tests.provider_fixtures import FakeProviderServer, text, turn

    project = tmp_path / "p"
    project.mkdir()
    with FakeProviderServer([turn(text("done"))]) as server:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.upper().endswith("_PROXY") and not k.startswith(("ANTHROPIC", "OPENAI"))
        }
        env.update(
            ANTHROPIC_BASE_URL=server.url,
            ANTHROPIC_API_KEY="sk-ant-test-0123456789",
            MERMAID_CONFIG_DIR=str(tmp_path / "cfg"),
            MERMAID_DATA_DIR=str(tmp_path / "data"),
            HOME=str(tmp_path / "home"),
            PYTHONPROFILEIMPORTTIME="1",
        )
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "mermaid_cli",
                "exec",
                "--json",
                "--model",
                "anthropic/claude-sonnet-4-5",
                "hi",
            ],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported = [
        line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "import time:" in line
    ]
    assert "asyncio" in imported and "_ssl" not in imported
