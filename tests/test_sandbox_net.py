"""Network off means only AF_UNIX sockets, enforced by the kernel (Landlock TCP rules + seccomp);
network on lets the very same connection through, so these tests can fail."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from mermaid_cli.security.sandbox import Mode, PreparedSandbox, for_mode, prepare, probe

SUPPORT = probe(env={})
pytestmark = pytest.mark.skipif(
    SUPPORT.landlock_abi < 3 or not SUPPORT.seccomp_filter, reason="no Landlock/seccomp"
)
PY = "/usr/bin/python3"


@pytest.fixture
def listener() -> Iterator[int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                conn.close()
            except OSError:
                continue

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join()
    srv.close()


def make(tmp_path: Path, network: bool, mode: str = "auto") -> PreparedSandbox:
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "priv").mkdir(exist_ok=True)
    policy = for_mode(
        cast(Mode, mode),
        project_root=tmp_path / "proj",
        temp_dir=tmp_path / "priv",
        network=network,
        home=tmp_path,
    )
    return prepare(policy, support=SUPPORT)


def run(sb: PreparedSandbox, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=20,
                          **sb.popen_kwargs())  # fmt: skip


def tcp(port: int) -> list[str]:
    return [
        PY,
        "-c",
        f"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')",
    ]


@pytest.mark.parametrize("mode", ["read_only", "auto"])
def test_tcp_connect_refused_without_network(tmp_path: Path, listener: int, mode: str) -> None:
    r = run(make(tmp_path, False, mode), tcp(listener), tmp_path)
    assert r.returncode != 0 and "connected" not in r.stdout
    assert "PermissionError" in r.stderr or "Operation not permitted" in r.stderr, r.stderr


def test_tcp_connect_works_with_network(tmp_path: Path, listener: int) -> None:
    r = run(make(tmp_path, True), tcp(listener), tmp_path)
    assert r.returncode == 0 and "connected" in r.stdout, r.stderr


def test_read_only_ignores_network_true(tmp_path: Path, listener: int) -> None:
    policy = for_mode("read_only", project_root=tmp_path, temp_dir=tmp_path, network=True, home=tmp_path)
    assert policy is not None and policy.network is False


def test_bash_dev_tcp_refused(tmp_path: Path, listener: int) -> None:
    cmd = ["/bin/bash", "-c", f"echo hi > /dev/tcp/127.0.0.1/{listener} && echo sent"]
    assert "sent" not in run(make(tmp_path, False), cmd, tmp_path).stdout
    assert "sent" in run(make(tmp_path, True), cmd, tmp_path).stdout


def test_curl_refused(tmp_path: Path, listener: int) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    r = run(make(tmp_path, False), ["curl", "-sS", "-m", "3", f"http://127.0.0.1:{listener}/"], tmp_path)
    assert r.returncode != 0 and r.returncode != 52 and r.returncode != 56, (r.returncode, r.stderr)


@pytest.mark.parametrize(
    "code",
    [
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('127.0.0.1', 9))",
        "socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)",
        "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)",
        "socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)",
        "socket.socket(socket.AF_PACKET, socket.SOCK_RAW)",
    ],
)
def test_non_unix_sockets_refused(tmp_path: Path, code: str) -> None:
    r = run(make(tmp_path, False), [PY, "-c", f"import socket; {code}; print('made')"], tmp_path)
    assert r.returncode != 0 and "made" not in r.stdout
    assert "PermissionError" in r.stderr, r.stderr


def test_unix_sockets_still_work(tmp_path: Path) -> None:
    code = (
        "import socket, os; a, b = socket.socketpair(); a.send(b'ping'); assert b.recv(4) == b'ping'; "
        "s = socket.socket(socket.AF_UNIX); s.bind(os.environ.get('TMPDIR', '.') + '/s.sock'); print('ok')"
    )
    sb = make(tmp_path, False)
    r = subprocess.run([PY, "-c", code], cwd=tmp_path, env={"PATH": "/usr/bin", "TMPDIR": str(sb.tmpdir)},
                       capture_output=True, text=True, timeout=20, **sb.popen_kwargs())  # fmt: skip
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def test_io_uring_and_namespaces_refused(tmp_path: Path) -> None:
    code = (
        "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long\n"
        "buf = ctypes.create_string_buffer(120)\n"
        "print('uring', libc.syscall(425, 4, buf), ctypes.get_errno())\n"
        "print('unshare', libc.unshare(0x10000000), ctypes.get_errno())\n"
        "print('bpf', libc.syscall(321, 0, 0, 0), ctypes.get_errno())\n"
    )
    r = run(make(tmp_path, True), [PY, "-c", code], tmp_path)
    assert r.returncode == 0, r.stderr
    for line in r.stdout.splitlines():
        name, ret, err = line.split()
        assert ret == "-1" and err == "1", line  # EPERM
    r = run(make(tmp_path, True), ["unshare", "-U", "true"], tmp_path)
    assert r.returncode != 0
