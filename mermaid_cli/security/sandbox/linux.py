"""The Linux backend: Landlock + seccomp + prctl/capabilities, prepared once, applied per child.

Owned here: `prepare(policy) -> PreparedSandbox` and the pre-exec step it hands to
`subprocess.Popen(preexec_fn=...)`.

Split for speed: everything expensive happens once in the parent — the Landlock ruleset
(`landlock_create_ruleset` + one `landlock_add_rule` per path, each from an O_PATH fd that is
closed right away), the seccomp BPF bytes, the capability masks, the encoded mount paths. The
child, between fork and exec, only makes cheap syscalls through pre-bound ctypes functions:
cgroup join, `PR_SET_PDEATHSIG`, (optionally) a private mount namespace with read-only binds,
`PR_SET_NO_NEW_PRIVS`, capability drop, `landlock_restrict_self`, seccomp. The ruleset fd is
close-on-exec, and Popen's `close_fds` runs only after the pre-exec step, so it needs no
`pass_fds`. Any failing step writes one line to the child's stderr and exits 126 (fail closed:
the command never runs unconfined).

Landlock is allow-list only and hierarchical: a right granted on a directory holds for
everything beneath it, and no rule can take it back for a subdirectory. Two consequences:

- `deny_read` (e.g. `~/.ssh` under a readable `$HOME`): the directories on the way down get only
  READ_DIR (names are listable), every other entry gets the full grant, the denied entry none.
  Entries created later in such a directory are not covered (they are unreadable until the
  next `prepare`).
- `read_only_within_writable` (`.git`, `.mermaid` under a writable project): granting MAKE_* /
  REMOVE_* on the project root would reach into `.git` too (`rm -rf .git` would work). So when
  we may unshare a mount namespace (CAP_SYS_ADMIN), the child gets a private mount namespace in
  which those paths are bind-mounted read-only, and Landlock grants the whole project: new
  top-level files work; writes, removals and renames in or of `.git` fail (EROFS/EBUSY). A
  protected path that does not exist at `prepare` time is not protected in this strategy.
  Otherwise ("landlock_siblings") the project root itself is only readable and each existing
  top-level entry but `.git`/`.mermaid` is writable: `.git` is safe, but new top-level entries
  cannot be created (new files in existing subdirectories can).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import stat
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from mermaid_cli.core.errors import MermaidError
from mermaid_cli.security.sandbox import abi, seccomp
from mermaid_cli.security.sandbox.guard import OrphanGuard
from mermaid_cli.security.sandbox.policy import SandboxPolicy
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


def _fn(name: str, restype: type, argtypes: list[type]) -> Callable[..., int]:
    address = ctypes.cast(getattr(libc(), name), ctypes.c_void_p).value
    if address is None:
        raise OSError(f"libc has no {name}")
    fn: Callable[..., int] = ctypes.CFUNCTYPE(restype, *argtypes, use_errno=True)(address)
    return fn


_UL = ctypes.c_ulong


@dataclass
class _Funcs:
    prctl: Callable[..., int]
    syscall3: Callable[..., int]
    mount: Callable[..., int]
    unshare: Callable[..., int]
    capset: Callable[..., int]


_funcs: _Funcs | None = None


def _libc_funcs() -> _Funcs:
    global _funcs
    if _funcs is None:
        _funcs = _Funcs(
            prctl=_fn("prctl", ctypes.c_int, [ctypes.c_int, _UL, _UL, _UL, _UL]),
            syscall3=_fn(
                "syscall", ctypes.c_long, [ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long]
            ),
            mount=_fn(
                "mount",
                ctypes.c_int,
                [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _UL, ctypes.c_void_p],
            ),
            unshare=_fn("unshare", ctypes.c_int, [ctypes.c_int]),
            capset=_fn("capset", ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
        )
    return _funcs


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


# -- Landlock rules -------------------------------------------------------------------------------


def _real(p: Path | str) -> str:
    return os.path.realpath(p)


def _beneath(child: str, parent: str) -> bool:
    return child != parent and (child.startswith(parent.rstrip("/") + "/") or parent == "/")


def plan_rules(
    policy: SandboxPolicy, handled: int, *, protect_by_mount: bool
) -> tuple[dict[str, int], list[str]]:
    """Path -> allowed rights (before masking to what each inode type accepts), and the paths to
    bind-mount read-only when `protect_by_mount`."""
    rules: dict[str, int] = {}
    read = abi.FS_READ & handled
    write = abi.FS_WRITE_ALL & handled
    deny = {_real(p) for p in policy.deny_read}
    protected = [_real(p) for p in policy.read_only_within_writable]
    mount_ro = [p for p in protected if os.path.lexists(p)] if protect_by_mount else []
    ro = set() if protect_by_mount else set(protected)

    def add(path: str, rights: int) -> None:
        if rights:
            rules[path] = rules.get(path, 0) | rights

    def emit(path: str, rights: int) -> None:
        if path in deny or not os.path.exists(path):
            return
        if path in ro:
            rights &= read
        deny_below = any(_beneath(d, path) for d in deny)
        ro_below = any(_beneath(r, path) for r in ro) and rights & ~read
        if not deny_below and not ro_below:
            add(path, rights)
            return
        add(path, rights & (abi.FS_READ_DIR if deny_below else read))
        try:
            entries = list(os.scandir(path))
        except OSError:
            return
        for entry in entries:
            if not entry.is_symlink():  # a link's target is granted (or not) where it lives
                emit(os.path.join(path, entry.name), rights)

    for root in policy.readable:
        emit(_real(root), read)
    for root in policy.writable:
        emit(_real(root), write)
    if os.path.isdir("/dev"):
        add("/dev", abi.FS_READ_DIR & handled)
    for dev in policy.devices:
        if os.path.exists(dev):
            add(_real(dev), abi.FS_DEVICE_RW & handled)
    return rules, mount_ro


def _create_ruleset(abi_version: int, fs: int, net: int, scoped: int) -> int:
    if abi_version >= 6:
        attr = struct.pack("=QQQ", fs, net, scoped)
    elif abi_version >= 4:
        attr = struct.pack("=QQ", fs, net)
    else:
        attr = struct.pack("=Q", fs)
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = libc().syscall(abi.SYS_LANDLOCK_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"landlock_create_ruleset: {os.strerror(err)}")
    return int(fd)


def _add_path_rule(ruleset_fd: int, path: str, rights: int) -> bool:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= abi.FS_FILE_RIGHTS
        if not rights:
            return False
        buf = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
        r = libc().syscall(
            abi.SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset_fd), ctypes.c_int(abi.LANDLOCK_RULE_PATH_BENEATH), buf,
            ctypes.c_uint32(0),
        )  # fmt: skip
        if r < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"landlock_add_rule {path}: {os.strerror(err)}")
        return True
    finally:
        os.close(fd)


# -- the prepared sandbox -------------------------------------------------------------------------


class PopenKwargs(TypedDict):
    preexec_fn: Callable[[], None]
    pass_fds: tuple[int, ...]


class _Held:
    """Kernel objects and ctypes buffers the pre-exec step uses by address. The step holds a
    reference to this, so they live as long as any Popen can still call it; the ruleset fd is
    closed by `PreparedSandbox.close()` (later children then fail closed) or on collection."""

    def __init__(self) -> None:
        self.ruleset_fd = -1
        self.buffers: list[object] = []

    def close(self) -> None:
        if self.ruleset_fd >= 0:
            os.close(self.ruleset_fd)
            self.ruleset_fd = -1

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


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
    _held: _Held = field(default_factory=_Held)
    preexec_fn: Callable[[], None] = field(default=lambda: None)

    @property
    def tmpdir(self) -> Path | None:
        return self.policy.temp_dir if self.policy is not None else None

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return ()  # the ruleset and cgroup fds are used before Popen closes fds; none survive exec

    def popen_kwargs(self) -> PopenKwargs:
        return {"preexec_fn": self.preexec_fn, "pass_fds": self.pass_fds}

    def register(self, pid: int) -> None:
        if self.guard is not None:
            self.guard.register(pid)

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
    funcs = _libc_funcs()
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
        ruleset_fd = _create_ruleset(support.landlock_abi, handled, net, scoped)
        try:
            prepared.rule_count = sum(_add_path_rule(ruleset_fd, p, r) for p, r in sorted(rules.items()))
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

    prepared.preexec_fn = _make_pre_exec(
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


def _make_pre_exec(
    *,
    funcs: _Funcs,
    held: _Held,
    parent_pid: int,
    cgroup_fd: int,
    mount_ro: tuple[tuple[bytes, int], ...],
    no_new_privs: bool,
    drop_bounding: tuple[int, ...],
    capset_args: tuple[int, int] | None,
    ruleset_fd: int,
    restrict_flags: int,
    seccomp_prog: int,
) -> Callable[[], None]:
    """The step run in the child after fork, before exec: only pre-bound syscalls, no imports."""
    prctl, syscall3, mount, unshare, capset = (
        funcs.prctl,
        funcs.syscall3,
        funcs.mount,
        funcs.unshare,
        funcs.capset,
    )
    write, exit_, getppid = os.write, os._exit, os.getppid
    sigkill = int(signal.SIGKILL)
    msgs = {
        name: f"mermaid sandbox: cannot apply {name}; refusing to run unconfined\n".encode()
        for name in (
            "cgroup",
            "pdeathsig",
            "mount namespace",
            "no_new_privs",
            "capabilities",
            "landlock",
            "seccomp",
        )
    }
    root, private = b"/", abi.MS_REC | abi.MS_PRIVATE
    bind = abi.MS_BIND | abi.MS_REC

    def fail(step: str) -> None:
        write(2, msgs[step])
        exit_(126)

    def pre_exec() -> None:
        if cgroup_fd >= 0:
            try:
                write(cgroup_fd, b"0")
            except OSError:
                fail("cgroup")
        if prctl(abi.PR_SET_PDEATHSIG, sigkill, 0, 0, 0) != 0:
            fail("pdeathsig")
        if getppid() != parent_pid:  # the parent died before PDEATHSIG was armed
            exit_(137)
        if mount_ro:
            if unshare(abi.CLONE_NEWNS) != 0 or mount(None, root, None, private, None) != 0:
                fail("mount namespace")
            for path, flags in mount_ro:
                if mount(path, path, None, bind, None) != 0 or mount(None, path, None, flags, None) != 0:
                    fail("mount namespace")
        if no_new_privs and prctl(abi.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            fail("no_new_privs")
        for cap in drop_bounding:
            if prctl(abi.PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                fail("capabilities")
        if drop_bounding or capset_args is not None:
            prctl(abi.PR_CAP_AMBIENT, abi.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        if capset_args is not None and capset(capset_args[0], capset_args[1]) != 0:
            fail("capabilities")
        if ruleset_fd >= 0 and held.ruleset_fd != ruleset_fd:  # closed: never run unconfined
            fail("landlock")
        if ruleset_fd >= 0 and syscall3(abi.SYS_LANDLOCK_RESTRICT_SELF, ruleset_fd, restrict_flags, 0) != 0:
            fail("landlock")
        if seccomp_prog and prctl(abi.PR_SET_SECCOMP, abi.SECCOMP_MODE_FILTER, seccomp_prog, 0, 0) != 0:
            fail("seccomp")

    return pre_exec


def harden_parent() -> None:
    """Make Mermaid itself non-dumpable: without CAP_SYS_PTRACE no process (same uid or root
    whose capability was dropped) can read its /proc/PID/environ, mem, maps, or ptrace it.

    Call once at startup, before secrets are loaded. /proc/PID/cmdline stays world-readable by
    kernel design, so secrets must never be put in argv.
    """
    if sys.platform.startswith("linux") and libc().prctl(abi.PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_DUMPABLE, 0): {os.strerror(err)}")
