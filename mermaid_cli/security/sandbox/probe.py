"""What the running kernel (and our privileges) can enforce: `probe() -> KernelSupport`.

Owned here: feature detection for the Linux sandbox, done with harmless syscalls in the calling
process (Landlock's version query, `prctl` reads, /proc reads) and no forks. `mermaid doctor`
prints it; `prepare()` consults it to fail closed.

`MERMAID_SANDBOX_FORCE_UNAVAILABLE=landlock,seccomp,...` makes `probe()` report the named
features as missing, so the fail-closed path is provable on a kernel that has everything. Names:
landlock, landlock_net, landlock_scope, seccomp, no_new_privs, mount_namespace, cgroup,
user_namespaces, pid_namespaces.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from mermaid_cli.security.sandbox import abi

FORCE_ENV = "MERMAID_SANDBOX_FORCE_UNAVAILABLE"


@dataclass(frozen=True)
class KernelSupport:
    """What this kernel can enforce."""

    platform: str
    arch: str | None  # None: seccomp numbers unknown for this machine
    landlock_abi: int  # 0: no Landlock
    seccomp_filter: bool
    no_new_privs: bool
    user_namespaces: bool
    pid_namespaces: bool
    mount_namespace: bool  # we may unshare a mount namespace (CAP_SYS_ADMIN) for read-only binds
    cap_drop: bool  # we hold CAP_SETPCAP, so children can drop the bounding set
    cgroup: str | None  # a writable cgroup v2 directory we may create children under
    forced_unavailable: tuple[str, ...] = ()

    @property
    def landlock_net(self) -> bool:
        return self.landlock_abi >= 4

    @property
    def landlock_scope(self) -> bool:
        return self.landlock_abi >= 6

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["landlock_net"] = self.landlock_net
        d["landlock_scope"] = self.landlock_scope
        d["forced_unavailable"] = list(self.forced_unavailable)
        return d


_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def landlock_abi() -> int:
    if not sys.platform.startswith("linux"):
        return 0
    r = libc().syscall(
        abi.SYS_LANDLOCK_CREATE_RULESET,
        None,
        ctypes.c_size_t(0),
        ctypes.c_uint32(abi.LANDLOCK_CREATE_RULESET_VERSION),
    )
    return max(int(r), 0)


def _status_caps() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


def _seccomp_filter() -> bool:
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return False
    # "Seccomp_filters:" exists only with CONFIG_SECCOMP_FILTER; PR_GET_SECCOMP must not fail.
    return "Seccomp_filters:" in status and libc().prctl(abi.PR_GET_SECCOMP, 0, 0, 0, 0) >= 0


def _user_namespaces() -> bool:
    try:
        if int(Path("/proc/sys/user/max_user_namespaces").read_text()) <= 0:
            return False
    except (OSError, ValueError):
        return False
    try:
        return (
            Path("/proc/sys/kernel/unprivileged_userns_clone").read_text().strip() != "0" or os.geteuid() == 0
        )
    except OSError:
        return True


def cgroup_v2_dir() -> str | None:
    """Our own cgroup v2 directory when it is writable (so a child cgroup can be made there)."""
    try:
        own = next(
            line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::")
        )
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except (OSError, StopIteration):
        return None
    for line in mounts:
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] == "cgroup2":
            mountpoint = left.split()[4]
            path = os.path.join(mountpoint, own.lstrip("/"))
            if os.access(path, os.W_OK) and os.access(os.path.join(path, "cgroup.procs"), os.W_OK):
                return path.rstrip("/") or "/"
    return None


def forced(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    raw = (env if env is not None else os.environ).get(FORCE_ENV, "")
    return tuple(sorted({p.strip() for p in raw.split(",") if p.strip()}))


def probe(env: Mapping[str, str] | None = None) -> KernelSupport:
    """What this kernel and process can enforce, minus what FORCE_ENV says to pretend is missing."""
    off = set(forced(env))
    linux = sys.platform.startswith("linux")
    arch = abi.current_arch() if linux else None
    caps = _status_caps() if linux else 0
    ll = landlock_abi() if linux else 0
    if "landlock" in off:
        ll = 0
    elif "landlock_scope" in off:
        ll = min(ll, 5)
    elif "landlock_net" in off:
        ll = min(ll, 3)
    return KernelSupport(
        platform=sys.platform,
        arch=arch.name if arch else None,
        landlock_abi=ll,
        seccomp_filter=linux and arch is not None and "seccomp" not in off and _seccomp_filter(),
        no_new_privs=linux
        and "no_new_privs" not in off
        and libc().prctl(abi.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) >= 0,
        user_namespaces=linux and "user_namespaces" not in off and _user_namespaces(),
        pid_namespaces=linux and "pid_namespaces" not in off and os.path.exists("/proc/self/ns/pid"),
        mount_namespace=linux
        and "mount_namespace" not in off
        and bool(caps >> abi.CAP_SYS_ADMIN & 1)
        and os.path.exists("/proc/self/ns/mnt"),
        cap_drop=linux and bool(caps >> abi.CAP_SETPCAP & 1),
        cgroup=None if (not linux or "cgroup" in off) else cgroup_v2_dir(),
        forced_unavailable=tuple(sorted(off)),
    )
