"""The Linux backend: Landlock + seccomp + prctl/capabilities, prepared once, applied per child.

Owned here: `prepare(policy) -> PreparedSandbox`, which hands `subprocess.Popen(preexec_fn=...)`
the pre-exec step (`preexec.make_pre_exec`), and `harden_parent`.

Split for speed: everything expensive happens once in the parent — the Landlock ruleset
(`landlock`), the seccomp BPF bytes, the capability masks, the encoded mount paths. The child,
between fork and exec, only makes cheap syscalls (`preexec`). The ruleset fd is close-on-exec,
and Popen's `close_fds` runs only after the pre-exec step, so it needs no `pass_fds`. How the
Landlock rules handle `deny_read` and `read_only_within_writable` (a private mount namespace
with read-only binds, or "landlock_siblings") is told in `landlock`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from mermaid_cli.core.errors import MermaidError
from mermaid_cli.security.sandbox import abi, seccomp
from mermaid_cli.security.sandbox.guard import OrphanGuard
from mermaid_cli.security.sandbox.landlock import add_path_rule, create_ruleset, plan_rules
from mermaid_cli.security.sandbox.policy import SandboxPolicy
from mermaid_cli.security.sandbox.preexec import Held, libc_funcs, make_pre_exec
from mermaid_cli.security.sandbox.probe import KernelSupport, libc, probe

MIN_LANDLOCK_ABI = 3  # TRUNCATE (Linux 6.2): below it truncate(2) outside writable roots works


class SandboxUnavailable(MermaidError):
    """The policy cannot be enforced by this kernel (fail closed: exit 2 before any model call)."""

    exit_code = 2
    status = "usage_error"
    code = "sandbox_unavailable"

    def __init__(self, missing: list[str]) -> None:
        super().__init__("kernel sandbox unavailable: missing " + "; ".join(missing))
        self.missing = tuple(missing)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _status_masks() -> dict[str, int]:
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("CapInh", "CapPrm", "CapEff", "CapBnd"):
                out[key] = int(value.strip(), 16)
    return out


def _cap_last() -> int:
    try:
        return int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        return 40


# -- the prepared sandbox -------------------------------------------------------------------------


class PopenKwargs(TypedDict):
    preexec_fn: Callable[[], None]
    pass_fds: tuple[int, ...]


@dataclass
class PreparedSandbox:
    """A policy turned into kernel objects, reusable for any number of children.

    Pass `popen_kwargs()` (i.e. `preexec_fn=`) to `subprocess.Popen`, give children `tmpdir` as
    TMPDIR, call `register(pid)` after each spawn, `close()` when the run ends.
    """

    policy: SandboxPolicy | None
    support: KernelSupport
    guard: OrphanGuard | None = None
    protect_strategy: str | None = None
    rule_count: int = 0
    caps_dropped: str = "none"
    no_new_privs: bool = True
    _mount_ro: list[tuple[bytes, int]] = field(default_factory=list)
    _held: Held = field(default_factory=Held)
    preexec_fn: Callable[[], None] = field(default=lambda: None)

    @property
    def tmpdir(self) -> Path | None:
        return self.policy.temp_dir if self.policy is not None else None

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return ()  # the ruleset and cgroup fds are used before Popen closes fds; none survive exec

    def popen_kwargs(self) -> PopenKwargs:
        return {"preexec_fn": self.preexec_fn, "pass_fds": self.pass_fds}

    def expect_child(self) -> None:
        """A child is about to be spawned (the model called a tool that starts one): let the
        guard warm the cgroup join while the call is judged (`OrphanGuard.warm_join`)."""
        if self.guard is not None:
            self.guard.warm_join()

    def register(self, pid: int) -> None:
        if self.guard is not None:
            self.guard.register(pid)

    def nothing_alive(self) -> bool:
        """No child started with this sandbox (nor any descendant) is alive (`OrphanGuard.empty`);
        False when that cannot be known cheaply (no cgroup): ask /proc then."""
        return self.guard is not None and self.guard.empty()

    @property
    def ruleset_fd(self) -> int:
        return self._held.ruleset_fd

    def close(self) -> None:
        """Release the ruleset; children spawned with this sandbox afterwards exit 126."""
        self._held.close()

    def describe(self) -> dict[str, object]:
        p = self.policy
        return {
            "mode": p.mode if p is not None else "full_access",
            "backend": "landlock+seccomp" if p is not None else "none",
            "abi": self.support.landlock_abi,
            "network": p.network if p is not None else True,
            "filesystem": p is not None,
            "signal_scope": p is not None and self.support.landlock_scope,
            "landlock_net": p is not None and not p.network and self.support.landlock_net,
            "read_only_strategy": self.protect_strategy,
            "capabilities_dropped": self.caps_dropped,
            "no_new_privs": self.no_new_privs,
            "orphan_guard": self.guard.mode if self.guard is not None else "pdeathsig",
            "tmpdir": str(self.tmpdir) if self.tmpdir is not None else None,
            "rules": self.rule_count,
        }


def _missing(policy: SandboxPolicy, support: KernelSupport) -> list[str]:
    missing: list[str] = []
    if not support.platform.startswith("linux"):
        return [f"a Linux kernel (this is {support.platform})"]
    if support.landlock_abi < MIN_LANDLOCK_ABI:
        have = f"ABI {support.landlock_abi}" if support.landlock_abi else "none"
        missing.append(
            f"Landlock ABI >= {MIN_LANDLOCK_ABI} (Linux >= 6.2, lsm=landlock; this kernel: {have})"
        )
    if not support.no_new_privs:
        missing.append("PR_SET_NO_NEW_PRIVS")
    if not support.seccomp_filter:
        why = "unknown architecture" if support.arch is None else "CONFIG_SECCOMP_FILTER"
        missing.append(f"seccomp filters ({why})")
    return missing


def prepare(
    policy: SandboxPolicy | None,
    *,
    guard: OrphanGuard | None = None,
    support: KernelSupport | None = None,
    no_new_privs_full_access: bool = False,
) -> PreparedSandbox:
    """Build the kernel objects for `policy` once; raise SandboxUnavailable if it cannot be enforced.

    `policy=None` (full_access) prepares only the always-on hardening: PR_SET_PDEATHSIG, the
    orphan guard's cgroup, and (as root) dropping the capabilities that reach other processes'
    memory. `no_new_privs_full_access` also sets no_new_privs there (it breaks sudo).
    """
    support = support or probe()
    if not support.platform.startswith("linux"):
        if policy is None:
            return PreparedSandbox(policy=None, support=support, no_new_privs=False)
        raise SandboxUnavailable(_missing(policy, support))
    prepared = PreparedSandbox(policy=policy, support=support, guard=guard)
    funcs = libc_funcs()
    masks = _status_masks()
    last_cap = _cap_last()

    # capabilities
    drop_bounding: list[int] = []
    cap_data = (_CapData * 2)()
    cap_header = _CapHeader(abi.LINUX_CAPABILITY_VERSION_3, 0)
    do_capset = False
    if policy is not None:
        keep = sum(1 << c for c in policy.keep_capabilities)
        remove = ~keep
        prepared.caps_dropped = "all" if not keep else "all but kept"
    else:
        remove = sum(1 << c for c in abi.MEMORY_REACHING_CAPS)
        prepared.caps_dropped = "memory-reaching"
    if support.cap_drop:
        drop_bounding = [
            c for c in range(last_cap + 1) if remove >> c & 1 and masks.get("CapBnd", 0) >> c & 1
        ]
    if masks.get("CapPrm", 0) or masks.get("CapInh", 0):
        do_capset = True
        for key, attr in (("CapEff", "effective"), ("CapPrm", "permitted"), ("CapInh", "inheritable")):
            value = masks.get(key, 0) & ~remove
            setattr(cap_data[0], attr, value & 0xFFFFFFFF)
            setattr(cap_data[1], attr, (value >> 32) & 0xFFFFFFFF)
    if not drop_bounding and not do_capset:
        prepared.caps_dropped = "none needed (no capabilities)"
    prepared._held.buffers += [cap_data, cap_header]

    # Landlock + seccomp
    ruleset_fd = -1
    prog_addr = 0
    restrict_flags = 0
    mount_ro: list[tuple[bytes, int]] = []
    if policy is not None:
        missing = _missing(policy, support)
        if missing:
            raise SandboxUnavailable(missing)
        handled = abi.fs_mask(support.landlock_abi)
        net = abi.net_mask(support.landlock_abi) if not policy.network else 0
        scoped = abi.scope_mask(support.landlock_abi)
        use_mount = support.mount_namespace and any(
            os.path.lexists(p) for p in policy.read_only_within_writable
        )
        rules, ro_paths = plan_rules(policy, handled, protect_by_mount=use_mount)
        if policy.read_only_within_writable:
            prepared.protect_strategy = "mount_ro" if use_mount else "landlock_siblings"
        for path in ro_paths:
            flags = abi.MS_REMOUNT | abi.MS_BIND | abi.MS_RDONLY
            with contextlib.suppress(OSError):
                flags |= os.statvfs(path).f_flag & (abi.MS_NOSUID | abi.MS_NODEV | abi.MS_NOEXEC)
            mount_ro.append((os.fsencode(path), flags))
        ruleset_fd = create_ruleset(support.landlock_abi, handled, net, scoped)
        try:
            prepared.rule_count = sum(add_path_rule(ruleset_fd, p, r) for p, r in sorted(rules.items()))
            arch = abi.current_arch()
            assert arch is not None
            code = seccomp.encode(
                seccomp.build_filter(arch, network=policy.network, metadata=policy.metadata_changes)
            )
            filt = ctypes.create_string_buffer(code, len(code))
            fprog = _SockFprog(len(code) // 8, ctypes.addressof(filt))
            prepared._held.buffers += [filt, fprog]
            prog_addr = ctypes.addressof(fprog)
        except BaseException:
            os.close(ruleset_fd)
            raise
        prepared._held.ruleset_fd = ruleset_fd
        prepared._mount_ro = mount_ro
    else:
        prepared.no_new_privs = no_new_privs_full_access

    prepared.preexec_fn = make_pre_exec(
        funcs=funcs,
        held=prepared._held,
        parent_pid=os.getpid(),
        cgroup_fd=guard.cgroup_procs_fd if guard is not None else -1,
        mount_ro=tuple(mount_ro),
        no_new_privs=prepared.no_new_privs,
        drop_bounding=tuple(drop_bounding),
        capset_args=(ctypes.addressof(cap_header), ctypes.addressof(cap_data)) if do_capset else None,
        ruleset_fd=ruleset_fd,
        restrict_flags=restrict_flags,
        seccomp_prog=prog_addr,
    )
    return prepared


def harden_parent() -> None:
    """Make Mermaid itself non-dumpable: without CAP_SYS_PTRACE no process (same uid or root
    whose capability was dropped) can read its /proc/PID/environ, mem, maps, or ptrace it.

    Call once at startup, before secrets are loaded. /proc/PID/cmdline stays world-readable by
    kernel design, so secrets must never be put in argv.
    """
    if sys.platform.startswith("linux") and libc().prctl(abi.PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_DUMPABLE, 0): {os.strerror(err)}")
