"""Landlock rules of the Linux sandbox: which path gets which rights, and the two syscalls that
turn them into a ruleset (`landlock_create_ruleset`, one `landlock_add_rule` per path, each from
an O_PATH fd closed right away).

Landlock is allow-list only and hierarchical: a right granted on a directory holds for
everything beneath it, and no rule can take it back for a subdirectory. Two consequences
(`plan_rules`):

- `deny_read` (e.g. `~/.ssh` under a readable `$HOME`): the directories on the way down get only
  READ_DIR (names are listable), every other entry gets the full grant, the denied entry none.
  Entries created later in such a directory are not covered (they are unreadable until the
  next `prepare`).
- `read_only_within_writable` (`.git`, `.mermaid` under a writable project): granting MAKE_* /
  REMOVE_* on the project root would reach into `.git` too (`rm -rf .git` would work). So when
  we may unshare a mount namespace (CAP_SYS_ADMIN), those paths are returned to be bind-mounted
  read-only in the child's private mount namespace, and Landlock grants the whole project: new
  top-level files work; writes, removals and renames in or of `.git` fail (EROFS/EBUSY). A
  protected path that does not exist at `prepare` time is not protected in this strategy.
  Otherwise ("landlock_siblings") the project root itself is only readable and each existing
  top-level entry but `.git`/`.mermaid` is writable: `.git` is safe, but new top-level entries
  cannot be created (new files in existing subdirectories can).
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct
from pathlib import Path

from mermaid_cli.security.sandbox import abi
from mermaid_cli.security.sandbox.policy import SandboxPolicy
from mermaid_cli.security.sandbox.probe import libc


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


def create_ruleset(abi_version: int, fs: int, net: int, scoped: int) -> int:
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


def add_path_rule(ruleset_fd: int, path: str, rights: int) -> bool:
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
