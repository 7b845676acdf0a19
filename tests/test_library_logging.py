"""Library log lines (the MCP SDK, httpx, warnings) reach stderr only through the redactor, one
line each, with no traceback unless MERMAID_DEBUG=1 (issue 15)."""

from __future__ import annotations

import io
import logging
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from conftest import call, run_mermaid, say, write_script

from mermaid_cli.run.output import Output
from mermaid_cli.security.redact import Redactor

SERVERS = Path(__file__).parent / "mcp_servers"
KEY = "sk-ant-JUNKJUNKJUNKJUNKJUNK0123"


def _output(debug: bool) -> tuple[Output, io.StringIO]:
    err = io.StringIO()
    out = Output("jsonl", SimpleNamespace(stdout=io.BytesIO(), stderr=err, monotonic=time.monotonic), quiet=False)
    out.redact = Redactor(["s3cr3t-value"]).redact
    out.install_logging(debug=debug)
    return out, err


def _log_failure() -> None:
    try:
        raise ValueError(f"bad input_value='{KEY}' and s3cr3t-value")
    except ValueError:
        logging.getLogger("mcp.client.stdio").exception("Failed to parse JSONRPC message from server")
    logging.getLogger("httpx").warning("token s3cr3t-value in a URL")
    logging.getLogger("httpx").info("HTTP Request: POST https://x (below WARNING, dropped)")


def test_library_logs_are_redacted_one_line_without_traceback() -> None:
    _out, err = _output(debug=False)
    _log_failure()
    text = err.getvalue()
    assert "Traceback" not in text and KEY not in text and "s3cr3t-value" not in text
    assert "mermaid: mcp.client.stdio: Failed to parse JSONRPC message from server (ValueError:" in text
    assert "mermaid: httpx: token [REDACTED] in a URL" in text
    assert "HTTP Request" not in text


def test_debug_shows_the_traceback_still_redacted() -> None:
    _out, err = _output(debug=True)
    _log_failure()
    text = err.getvalue()
    assert "Traceback" in text and KEY not in text and "s3cr3t-value" not in text


def test_junk_on_an_mcp_servers_stdout_prints_no_traceback_and_no_key(
    project: Path, isolated_env: Path
) -> None:
    cfg = isolated_env / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(
        "mcp_defer_tools = false\n"
        f'[mcp_servers.junk]\ncommand = "{sys.executable}"\nargs = ["{SERVERS / "junk_stdout.py"}"]\n'
    )
    write_script(project / "s.jsonl", [call("mcp__junk__echo", {"text": "hi"}), say("done")])
    out = run_mermaid(
        ["exec", "--json", "--safety", "full_access", "--model", "replay/s.jsonl", "echo"], project
    )
    assert out.code != 70, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    assert KEY not in out.stderr and KEY not in out.stdout
