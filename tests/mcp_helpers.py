"""Helpers shared by the MCP tests (not a test module)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

SERVERS = Path(__file__).parent / "mcp_servers"
PY = sys.executable


def server_args(script: str, *extra: str) -> dict[str, object]:
    return {"command": PY, "args": [str(SERVERS / script), *extra]}


def read_pid(path: Path, timeout: float = 10.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"no pid in {path}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    """Until the server listens (a liveness bound, not a timing: a loaded CI machine once took
    over 20 s to start one)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"port {port} never opened")


def start_http(script: str, *extra: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen([PY, str(SERVERS / script), "--http", str(port), *extra])
    wait_port(port, proc)
    return proc, port


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
