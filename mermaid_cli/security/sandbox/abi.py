"""Kernel constants for the Linux sandbox: Landlock, seccomp, prctl, capabilities, mounts.

Owned here (and only here) so the numbers are written once and checked against the uapi headers
(`include/uapi/linux/landlock.h`, `seccomp.h`, `prctl.h`, `capability.h`, `audit.h`, `mount.h`) in
one place. Syscall numbers differ between x86_64 and aarch64; both are listed. Nothing in this
module performs a syscall.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass

# -- Landlock (landlock.h) ------------------------------------------------------------------------
SYS_LANDLOCK_CREATE_RULESET = 444  # same number on every architecture (generic table)
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446

LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
LANDLOCK_RULE_PATH_BENEATH = 1
LANDLOCK_RULE_NET_PORT = 2

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5

NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4

SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

# ABI 7 (6.15) adds audit-log flags for landlock_restrict_self; no new access rights.
RESTRICT_SELF_LOG_SAME_EXEC_OFF = 1 << 0

FS_ABI1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM


def fs_mask(abi: int) -> int:
    """Every filesystem right the kernel of Landlock ABI `abi` knows (and so can handle)."""
    if abi <= 0:
        return 0
    mask = FS_ABI1
    if abi >= 2:
        mask |= FS_REFER
    if abi >= 3:
        mask |= FS_TRUNCATE
    if abi >= 5:
        mask |= FS_IOCTL_DEV
    return mask


def net_mask(abi: int) -> int:
    return NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0


def scope_mask(abi: int) -> int:
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0


# Rights that make sense on a non-directory (the kernel refuses others with EINVAL).
FS_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
FS_READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
FS_WRITE_ALL = (1 << 16) - 1  # masked by fs_mask(abi) before use
FS_DEVICE_RW = FS_READ_FILE | FS_WRITE_FILE | FS_IOCTL_DEV | FS_TRUNCATE

# -- prctl (prctl.h) ------------------------------------------------------------------------------
PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_GET_SECCOMP = 21
PR_SET_SECCOMP = 22
PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

# -- seccomp (seccomp.h, filter.h, audit.h) -------------------------------------------------------
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000

BPF_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
BPF_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
BPF_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
BPF_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
BPF_RET_K = 0x06  # BPF_RET | BPF_K

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
X32_SYSCALL_BIT = 0x40000000

# struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]; }
SECCOMP_DATA_NR = 0
SECCOMP_DATA_ARCH = 4
SECCOMP_DATA_ARGS = 16  # args[i] low 32 bits at 16 + 8*i on little-endian machines

# -- sockets, clone flags, capabilities, mounts ---------------------------------------------------
AF_UNIX = 1
CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NAMESPACES = (
    CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET
)

LINUX_CAPABILITY_VERSION_3 = 0x20080522
CAP_SETPCAP = 8
CAP_SYS_MODULE = 16
CAP_SYS_RAWIO = 17
CAP_SYS_PTRACE = 19
CAP_SYS_ADMIN = 21
CAP_PERFMON = 38
CAP_BPF = 39
# Capabilities that reach another process's memory (or the kernel's): dropped even for
# full_access children, so nothing started for the model reads Mermaid's secrets.
MEMORY_REACHING_CAPS = (CAP_SYS_PTRACE, CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_ADMIN, CAP_PERFMON, CAP_BPF)

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18

EPERM = 1
ENOSYS = 38


@dataclass(frozen=True)
class Arch:
    """Per-architecture numbers the seccomp filter and the child steps need."""

    name: str
    audit_arch: int
    syscalls: dict[str, int]
    reject_x32: bool


_X86_64 = {
    "socket": 41, "socketpair": 53, "clone": 56, "clone3": 435, "ptrace": 101, "capset": 126,
    "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "bpf": 321,
    "perf_event_open": 298, "keyctl": 250, "add_key": 248, "request_key": 249,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "process_vm_readv": 310, "process_vm_writev": 311, "kexec_load": 246, "kexec_file_load": 320,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "open_by_handle_at": 304,
    "userfaultfd": 323, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    # metadata changes (refused in read_only: Landlock does not cover chmod/chown/utimes/xattrs)
    "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "chown": 92, "fchown": 93,
    "lchown": 94, "fchownat": 260, "utime": 132, "utimes": 235, "futimesat": 261, "utimensat": 280,
    "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198,
    "fremovexattr": 199, "setxattrat": 463, "removexattrat": 466,
}  # fmt: skip

METADATA_SYSCALLS = (
    "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "utime",
    "utimes", "futimesat", "utimensat", "setxattr", "lsetxattr", "fsetxattr", "removexattr",
    "lremovexattr", "fremovexattr", "setxattrat", "removexattrat",
)  # fmt: skip

_AARCH64 = {
    "socket": 198, "socketpair": 199, "clone": 220, "clone3": 435, "ptrace": 117, "capset": 91,
    "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "bpf": 280,
    "perf_event_open": 241, "keyctl": 219, "add_key": 217, "request_key": 218,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "process_vm_readv": 270, "process_vm_writev": 271, "kexec_load": 104, "kexec_file_load": 294,
    "init_module": 105, "finit_module": 273, "delete_module": 106, "open_by_handle_at": 265,
    "userfaultfd": 282, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "fchownat": 54, "fchown": 55, "utimensat": 88,
    "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15,
    "fremovexattr": 16, "setxattrat": 463, "removexattrat": 466,
}  # fmt: skip

ARCHES = {
    "x86_64": Arch("x86_64", AUDIT_ARCH_X86_64, _X86_64, reject_x32=True),
    "aarch64": Arch("aarch64", AUDIT_ARCH_AARCH64, _AARCH64, reject_x32=False),
}


def current_arch() -> Arch | None:
    """The running machine's numbers, or None on an architecture this module does not know."""
    machine = platform.machine().lower()
    return ARCHES.get({"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine))
