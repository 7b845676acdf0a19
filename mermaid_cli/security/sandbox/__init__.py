"""The kernel sandbox for processes started for the model (DESIGN.md §4.1), Linux backend.

Owns: the typed policy (`policy.py`), feature detection (`probe.py`), the Landlock + seccomp +
prctl backend (`linux.py`; its Landlock rules in `landlock.py`, the child's pre-exec step in
`preexec.py`, constants in `abi.py`, BPF in `seccomp.py`) and the orphan guard (`guard.py`).
Imports only the standard library and `mermaid_cli.core.errors`.

Wiring, once per run in the parent (on the event loop's thread, which lives as long as the run):

    harden_parent()                                  # Mermaid non-dumpable, before loading secrets
    support = probe()                                # for doctor / session_started
    guard = OrphanGuard.start(support.cgroup)        # nothing outlives Mermaid, even kill -9
    sandbox = prepare(for_mode(...), guard=guard)    # or prepare(None, guard=guard): full_access
    ...  Popen(argv, env={..., "TMPDIR": str(sandbox.tmpdir)}, start_new_session=True,
               close_fds=True, **sandbox.popen_kwargs());  sandbox.register(popen.pid)
    sandbox.close(); guard.close()
"""

from mermaid_cli.security.sandbox import abi, seccomp
from mermaid_cli.security.sandbox.guard import OrphanGuard
from mermaid_cli.security.sandbox.linux import PreparedSandbox, SandboxUnavailable, harden_parent, prepare
from mermaid_cli.security.sandbox.policy import Mode, SandboxPolicy, for_mode, runtime_read_roots
from mermaid_cli.security.sandbox.probe import FORCE_ENV, KernelSupport, probe

__all__ = [
    "FORCE_ENV",
    "KernelSupport",
    "Mode",
    "OrphanGuard",
    "PreparedSandbox",
    "SandboxPolicy",
    "SandboxUnavailable",
    "for_mode",
    "harden_parent",
    "prepare",
    "abi",
    "probe",
    "runtime_read_roots",
    "seccomp",
]
