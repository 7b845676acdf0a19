"""Fail closed, probe, describe, the BPF encoding, and the `Child.spawn(sandbox=...)` hook."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import cast

import pytest

from mermaid_cli.security.sandbox import (
    FORCE_ENV,
    Mode,
    SandboxUnavailable,
    abi,
    for_mode,
    prepare,
    probe,
    seccomp,
)
from mermaid_cli.tools.proctree import Child

SUPPORT = probe(env={})
needs_kernel = pytest.mark.skipif(
    SUPPORT.landlock_abi < 3 or not SUPPORT.seccomp_filter, reason="no Landlock"
)


def policy(tmp_path: Path, mode: str = "auto", network: bool = False):  # type: ignore[no-untyped-def]
    return for_mode(
        cast(Mode, mode), project_root=tmp_path, temp_dir=tmp_path, home=tmp_path, network=network
    )


def test_probe_reports_kernel() -> None:
    d = SUPPORT.as_dict()
    assert {
        "landlock_abi",
        "seccomp_filter",
        "no_new_privs",
        "user_namespaces",
        "pid_namespaces",
        "cgroup",
    } <= set(d)


@pytest.mark.parametrize(
    ("force", "word"), [("landlock", "Landlock"), ("seccomp", "seccomp"), ("no_new_privs", "NO_NEW_PRIVS")]
)
def test_fail_closed_names_what_is_missing(tmp_path: Path, force: str, word: str) -> None:
    support = probe(env={FORCE_ENV: force})
    assert force in support.forced_unavailable
    with pytest.raises(SandboxUnavailable) as info:
        prepare(policy(tmp_path), support=support)
    assert word in str(info.value) and info.value.exit_code == 2


def test_force_env_is_read_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FORCE_ENV, "landlock")
    with pytest.raises(SandboxUnavailable, match="Landlock"):
        prepare(policy(tmp_path))


def test_full_access_needs_no_sandbox(tmp_path: Path) -> None:
    assert for_mode("full_access", project_root=tmp_path, temp_dir=tmp_path) is None
    auto = for_mode("full_access", project_root=tmp_path, temp_dir=tmp_path, sandbox_full_access=True)
    assert auto is not None and auto.mode == "auto"
    sb = prepare(None, support=probe(env={FORCE_ENV: "landlock,seccomp"}))
    assert sb.describe()["backend"] == "none"


@needs_kernel
def test_without_landlock_net_seccomp_still_blocks_tcp(tmp_path: Path) -> None:
    sb = prepare(policy(tmp_path), support=probe(env={FORCE_ENV: "landlock_net"}))
    assert sb.describe()["landlock_net"] is False
    r = subprocess.run(["/usr/bin/python3", "-c", "import socket; socket.socket()"], capture_output=True,
                       **sb.popen_kwargs())  # fmt: skip
    assert r.returncode != 0 and b"PermissionError" in r.stderr


@needs_kernel
def test_closed_sandbox_fails_closed_with_126(tmp_path: Path) -> None:
    sb = prepare(policy(tmp_path), support=SUPPORT)
    sb.close()
    r = subprocess.run(["/bin/true"], capture_output=True, **sb.popen_kwargs())
    assert r.returncode == 126 and b"refusing to run unconfined" in r.stderr


@needs_kernel
def test_describe(tmp_path: Path) -> None:
    d = prepare(policy(tmp_path, "read_only"), support=SUPPORT).describe()
    assert d["mode"] == "read_only" and d["backend"] == "landlock+seccomp" and d["network"] is False
    assert d["abi"] == SUPPORT.landlock_abi and d["tmpdir"] == str(tmp_path)


def test_seccomp_program_shape() -> None:
    for arch in abi.ARCHES.values():
        prog = seccomp.build_filter(arch, network=False, metadata=False)
        assert prog[0] == (abi.BPF_LD_W_ABS, 0, 0, abi.SECCOMP_DATA_ARCH)
        assert prog[1][3] == arch.audit_arch and prog[2][3] == abi.SECCOMP_RET_KILL_PROCESS
        assert prog[-1] == (abi.BPF_RET_K, 0, 0, abi.SECCOMP_RET_ALLOW)
        for i, (code, jt, jf, _) in enumerate(prog):  # every jump lands inside the program
            if code in (abi.BPF_JEQ_K, abi.BPF_JGE_K, abi.BPF_JSET_K):
                assert i + 1 + max(jt, jf) < len(prog)
        assert len(seccomp.encode(prog)) == 8 * len(prog)


@needs_kernel
async def test_child_spawn_hook(tmp_path: Path) -> None:
    sb = prepare(policy(tmp_path, "read_only"), support=SUPPORT)
    out: list[bytes] = []
    child = await Child.spawn(
        ["/bin/sh", "-c", "touch /tmp/x-mermaid-hook 2>&1; grep NoNewPrivs /proc/self/status"],
        cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, on_output=lambda _s, d: out.append(d), sandbox=sb,
    )  # fmt: skip
    assert await child.wait(10) and await child.wait_eof(5)
    await child.aclose()
    text = b"".join(out).decode()
    assert "Permission denied" in text and "NoNewPrivs:\t1" in text
    assert not Path("/tmp/x-mermaid-hook").exists()
