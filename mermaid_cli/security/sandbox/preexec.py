"""The child half of the Linux sandbox: the step run between fork and exec
(`subprocess.Popen(preexec_fn=...)`), and the libc functions it calls, bound once in the parent.

In the child only cheap syscalls through pre-bound ctypes functions run, no imports: cgroup
join, `PR_SET_PDEATHSIG`, (optionally) a private mount namespace with read-only binds,
`PR_SET_NO_NEW_PRIVS`, capability drop, `landlock_restrict_self`, seccomp. Any failing step
writes one line to the child's stderr and exits 126 (fail closed: the command never runs
unconfined). `Held` keeps the kernel objects and ctypes buffers the step uses by address alive.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass

from mermaid_cli.security.sandbox import abi
from mermaid_cli.security.sandbox.probe import libc


def _fn(name: str, restype: type, argtypes: list[type]) -> Callable[..., int]:
    address = ctypes.cast(getattr(libc(), name), ctypes.c_void_p).value
    if address is None:
        raise OSError(f"libc has no {name}")
    fn: Callable[..., int] = ctypes.CFUNCTYPE(restype, *argtypes, use_errno=True)(address)
    return fn


_UL = ctypes.c_ulong


@dataclass
class LibcFuncs:
    """The libc calls the child needs between fork and exec."""

    prctl: Callable[..., int]
    syscall3: Callable[..., int]
    mount: Callable[..., int]
    unshare: Callable[..., int]
    capset: Callable[..., int]


_funcs: LibcFuncs | None = None


def libc_funcs() -> LibcFuncs:
    global _funcs
    if _funcs is None:
        _funcs = LibcFuncs(
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


class Held:
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


def make_pre_exec(
    *,
    funcs: LibcFuncs,
    held: Held,
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
