"""The seccomp filter: a classic-BPF program built once, in the parent, as bytes.

Owned here: the filter's rules and their encoding (`struct sock_filter` = u16 code, u8 jt, u8 jf,
u32 k). What it refuses, with EPERM unless noted:

- a foreign architecture (or the x32 ABI on x86_64): the process is killed, since syscall
  numbers would mean something else;
- `socket()` of any family but AF_UNIX when the policy has no network (UDP, raw, netlink,
  packet, ... as well as TCP, which Landlock also refuses at ABI >= 4);
- escape and snooping tools: io_uring (its ops bypass seccomp), namespaces (`unshare`, `setns`,
  `clone` with CLONE_NEW* flags; `clone3` gets ENOSYS so libc falls back to `clone`), mounts and
  the new mount API, `bpf`, `perf_event_open`, the keyring, `process_vm_readv/writev`,
  `open_by_handle_at`, `userfaultfd`, kernel modules and kexec;
- in `read_only` (policy `metadata_changes=False`): chmod/chown/utimes/xattr syscalls, which
  Landlock does not mediate.

`ptrace` stays allowed: Landlock already limits it to processes inside the sandbox domain, and
debuggers of the child's own children keep working.
"""

from __future__ import annotations

import struct

from mermaid_cli.security.sandbox import abi

BLOCKED = (
    "io_uring_setup", "io_uring_enter", "io_uring_register", "process_vm_readv", "process_vm_writev",
    "unshare", "setns", "mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "bpf", "perf_event_open", "keyctl", "add_key",
    "request_key", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "open_by_handle_at", "userfaultfd",
)  # fmt: skip

Insn = tuple[int, int, int, int]


def _stmt(code: int, k: int) -> Insn:
    return (code, 0, 0, k)


def _ret(k: int) -> Insn:
    return (abi.BPF_RET_K, 0, 0, k)


def _if_nr(nr: int, block: list[Insn]) -> list[Insn]:
    """`if (nr == NR) { block }`; the block must end in a return (it clobbers the accumulator)."""
    return [(abi.BPF_JEQ_K, 0, len(block), nr), *block]


def build_filter(arch: abi.Arch, *, network: bool, metadata: bool = True) -> list[Insn]:
    """The program for `arch`; `network=False` allows only AF_UNIX sockets, `metadata=False`
    refuses chmod/chown/utimes/xattr changes (EPERM) everywhere."""
    eperm = abi.SECCOMP_RET_ERRNO | abi.EPERM
    prog: list[Insn] = [
        _stmt(abi.BPF_LD_W_ABS, abi.SECCOMP_DATA_ARCH),
        (abi.BPF_JEQ_K, 1, 0, arch.audit_arch),
        _ret(abi.SECCOMP_RET_KILL_PROCESS),
        _stmt(abi.BPF_LD_W_ABS, abi.SECCOMP_DATA_NR),
    ]
    if arch.reject_x32:
        prog += [(abi.BPF_JGE_K, 0, 1, abi.X32_SYSCALL_BIT), _ret(abi.SECCOMP_RET_KILL_PROCESS)]
    nrs = arch.syscalls
    for name in BLOCKED:
        prog += _if_nr(nrs[name], [_ret(eperm)])
    if not metadata:
        for name in abi.METADATA_SYSCALLS:
            if name in nrs:
                prog += _if_nr(nrs[name], [_ret(eperm)])
    prog += _if_nr(nrs["clone3"], [_ret(abi.SECCOMP_RET_ERRNO | abi.ENOSYS)])
    prog += _if_nr(
        nrs["clone"],
        [
            _stmt(abi.BPF_LD_W_ABS, abi.SECCOMP_DATA_ARGS),  # flags, low 32 bits
            (abi.BPF_JSET_K, 0, 1, abi.CLONE_NAMESPACES),
            _ret(eperm),
            _ret(abi.SECCOMP_RET_ALLOW),
        ],
    )
    if not network:
        prog += _if_nr(
            nrs["socket"],
            [
                _stmt(abi.BPF_LD_W_ABS, abi.SECCOMP_DATA_ARGS),  # domain (an int)
                (abi.BPF_JEQ_K, 0, 1, abi.AF_UNIX),
                _ret(abi.SECCOMP_RET_ALLOW),
                _ret(eperm),
            ],
        )
    prog.append(_ret(abi.SECCOMP_RET_ALLOW))
    if len(prog) > 4096:  # BPF_MAXINSNS
        raise ValueError("seccomp filter too long")
    return prog


def encode(prog: list[Insn]) -> bytes:
    return b"".join(struct.pack("=HBBI", *insn) for insn in prog)
