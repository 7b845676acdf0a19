"""Children cannot read Mermaid's secrets through /proc/<mermaid>/environ or /proc/<mermaid>/mem:
neither sandboxed children (Landlock's ptrace scoping) nor full_access ones (Mermaid non-dumpable
via `harden_parent()`, plus the child's memory-reaching capabilities dropped), as root and as an
unprivileged user. A control run without any hardening shows the probe does read secrets."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mermaid_cli.security.sandbox import probe

SUPPORT = probe(env={})
pytestmark = pytest.mark.skipif(
    SUPPORT.landlock_abi < 3 or not SUPPORT.seccomp_filter, reason="no Landlock/seccomp"
)

CHILD = r"""
import json, os
ppid = os.getppid()
out = {}
for name in ("environ", "cmdline", "maps"):
    try:
        with open(f"/proc/{ppid}/{name}", "rb") as f:
            out[name] = f.read().decode("latin-1")
    except OSError as e:
        out[name] = "ERR " + type(e).__name__
try:
    with open(f"/proc/{ppid}/mem", "rb") as f:
        start = int(out["maps"].split("-")[0], 16) if not out["maps"].startswith("ERR") else 0x400000
        f.seek(start)
        out["mem"] = "read %d bytes" % len(f.read(16))
except OSError as e:
    out["mem"] = "ERR " + type(e).__name__
print(json.dumps(out))
"""

PARENT = r"""
import os, subprocess, sys
from pathlib import Path
from mermaid_cli.security.sandbox import for_mode, harden_parent, prepare
mode, harden, base = sys.argv[1], sys.argv[2] == "1", Path(sys.argv[3])
if harden:
    harden_parent()
kwargs = {}
if mode != "raw":
    policy = None if mode == "full_access" else for_mode(
        "auto", project_root=base / "proj", temp_dir=base / "priv", home=base / "home")
    kwargs = prepare(policy).popen_kwargs()
r = subprocess.run(["/usr/bin/python3", "-c", sys.argv[4]], env={"PATH": "/usr/bin:/bin"},
                   capture_output=True, text=True, cwd=base, **kwargs)
sys.stdout.write(r.stdout)
sys.stderr.write(r.stderr)
"""


@pytest.fixture(scope="module")
def base() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="mermaid-sbx-secrets-", dir="/tmp"))
    for sub in ("proj", "priv", "home"):
        (d / sub).mkdir()
    for p in (d, d / "proj", d / "priv", d / "home"):
        p.chmod(0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def probe_parent(base: Path, mode: str, harden: bool, user: str | None) -> tuple[dict[str, str], str]:
    secret = f"sk-test-{uuid.uuid4().hex}"
    argv = [sys.executable, "-c", PARENT, mode, "1" if harden else "0", str(base), CHILD]
    if user is not None:
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *argv]
    env = {"PATH": os.environ["PATH"], "MERMAID_TEST_PROVIDER_KEY": secret, "HOME": str(base / "home")}
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), secret


def _nobody_can_import() -> bool:
    """uid 65534 can run this interpreter and import mermaid_cli (a checkout in a 0700 directory,
    such as `mktemp -d`, is unreadable to it: that variant then cannot run at all)."""
    probe = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        sys.executable,
        "-c",
        "import mermaid_cli",
    ]
    try:
        return subprocess.run(probe, capture_output=True, timeout=30, cwd="/").returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


USERS = [None] + (["65534"] if os.geteuid() == 0 and shutil.which("setpriv") and _nobody_can_import() else [])


@pytest.mark.parametrize("user", USERS, ids=lambda u: "root" if u is None else f"uid{u}")
@pytest.mark.parametrize(
    ("mode", "harden"),
    [("auto", True), ("auto", False), ("full_access", True)],
    ids=["sandboxed+hardened", "sandboxed-only", "full_access+hardened"],
)
def test_child_cannot_read_parent_secrets(base: Path, mode: str, harden: bool, user: str | None) -> None:
    if os.geteuid() != 0 and user is None:
        pytest.skip("root variant needs root")
    out, secret = probe_parent(base, mode, harden, user)
    assert secret not in json.dumps(out)
    assert out["environ"].startswith("ERR"), out
    assert out["mem"].startswith("ERR"), out
    assert out["maps"].startswith("ERR"), out
    assert not out["cmdline"].startswith("ERR")  # world-readable by design: secrets never go in argv


@pytest.mark.parametrize("user", USERS, ids=lambda u: "root" if u is None else f"uid{u}")
def test_control_unhardened_child_does_read_secrets(base: Path, user: str | None) -> None:
    """Proves the probe works: with no hardening at all the secret is visible."""
    out, secret = probe_parent(base, "raw", False, user)
    assert secret in out["environ"]
    assert out["mem"].startswith("read")


def test_full_access_child_lost_only_memory_reaching_caps(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    from mermaid_cli.security.sandbox import prepare

    r = subprocess.run(["grep", "-E", "^Cap(Eff|Bnd)", "/proc/self/status"], capture_output=True, text=True,
                       **prepare(None).popen_kwargs())  # fmt: skip
    caps = {line.split(":")[0]: int(line.split()[1], 16) for line in r.stdout.splitlines()}
    for cap in (19, 16, 17, 21, 38, 39):  # SYS_PTRACE, SYS_MODULE, SYS_RAWIO, SYS_ADMIN, PERFMON, BPF
        assert not caps["CapBnd"] >> cap & 1 and not caps["CapEff"] >> cap & 1
    assert caps["CapEff"] >> 0 & 1  # CAP_CHOWN kept: full_access stays unrestricted otherwise
