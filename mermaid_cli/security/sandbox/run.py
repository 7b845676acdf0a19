"""The sandbox of one run: the once-per-run wiring of DESIGN.md §4.1 behind one call.

Owned here: `RunSandbox.start(...)`, which decides from the settings which policy the run's
children get and builds it (parent hardening, the private temp dir, the kernel probe, the
orphan guard, `prepare`), applies fail-closed / best-effort, and `close()`, which undoes it.
The runner puts `.prepared` on the ToolContext; the shell tools pass it to every child.

Which policy (the `[sandbox] mode` is `auto`, `on`, `best-effort` or `off`):

- `read_only`, `ask`, `auto`: their `for_mode` policy; `--confine-fs` (`safety.filesystem =
  "project"`) changes nothing there, these modes already confine writes to the project.
- `full_access`: no policy (only the always-on hardening: PDEATHSIG, orphan guard, memory-reaching
  capabilities dropped), unless `mode = "on"` (`--sandbox`) or `--confine-fs`: the `auto` policy.
- network: sockets other than Unix ones are refused when `safety.network = "deny"`
  (`--no-network`), and always in `read_only`.
- `off`: no policy at all, no temp dir; the always-on hardening stays (it confines nothing the
  model asked for, it only makes sure nothing outlives Mermaid).

Must be called on the event loop's thread (see `Child.spawn`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mermaid_cli.config.dirs import data_path, user_config_path
from mermaid_cli.security.sandbox.guard import OrphanGuard
from mermaid_cli.security.sandbox.linux import PreparedSandbox, SandboxUnavailable, harden_parent, prepare
from mermaid_cli.security.sandbox.policy import Mode, SandboxPolicy, for_mode, runtime_read_roots
from mermaid_cli.security.sandbox.probe import KernelSupport, probe


def _paths(raw: list[str], home: Path) -> tuple[Path, ...]:
    out: list[Path] = []
    for entry in raw:
        path = Path(home / entry[2:]) if entry.startswith("~/") else Path(entry)
        if not path.is_absolute():
            raise ValueError(f"sandbox root {entry!r} must be absolute (or start with ~/)")
        out.append(path)
    return tuple(out)


# Capabilities a uid-0 full_access child keeps under the network-only policy: all but those that
# reach Mermaid's memory or the kernel (as the always-on hardening drops) and the network ones.
_DROPPED_IN_FULL_ACCESS = {12, 13, 16, 17, 19, 21, 38, 39}  # NET_ADMIN NET_RAW SYS_MODULE SYS_RAWIO SYS_PTRACE SYS_ADMIN PERFMON BPF
_FULL_ACCESS_CAPS = tuple(c for c in range(41) if c not in _DROPPED_IN_FULL_ACCESS)


def network_only(temp_dir: Path) -> SandboxPolicy:
    """`full_access` with `--no-network`: the filesystem stays unrestricted, but the kernel refuses
    every socket except Unix ones, so a command the gate let through still cannot reach the network."""
    root = Path("/")
    return SandboxPolicy(
        readable=(root,),
        writable=(root,),
        network=False,
        temp_dir=temp_dir,
        mode="full_access+no_network",
        keep_capabilities=_FULL_ACCESS_CAPS,
    )


def policy_mode(safety_mode: str, enforce: str, *, confine_fs: bool) -> Mode | None:
    """The `for_mode` mode a run's children get; None: no Landlock/seccomp policy."""
    if enforce == "off":
        return None
    if safety_mode == "full_access":
        return "auto" if (enforce == "on" or confine_fs) else None
    if safety_mode in ("read_only", "ask", "auto"):
        return safety_mode  # type: ignore[return-value]  # narrowed by the test above
    raise ValueError(f"unknown safety mode {safety_mode!r}")


def _own_dirs(env: Mapping[str, str], project_root: Path, home: Path) -> tuple[Path, ...]:
    """Mermaid's config and data directories wherever the environment puts them (the defaults are
    among `HOME_SECRETS`): config with credentials in headers, sessions, keys. One that holds the
    project or the home directory is left readable (hiding it would hide them too)."""
    found: list[Path] = []
    for raw in (user_config_path(env), data_path(env)):
        own = Path(os.path.abspath(raw))
        if not any(p == own or own in p.parents for p in (Path(os.path.abspath(project_root)), home)):
            found.append(own)
    return tuple(found)


@dataclass
class RunSandbox:
    """What one run's children are confined by; `close()` when the run ends, however it ends."""

    enforce: str
    prepared: PreparedSandbox | None
    support: KernelSupport | None
    guard: OrphanGuard | None = None
    tmpdir: Path | None = None
    degraded: tuple[str, ...] = ()  # best-effort: what the kernel could not provide
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def start(
        cls,
        *,
        enforce: str,
        safety_mode: str,
        network_denied: bool,
        confine_fs: bool,
        project_root: Path,
        writable_roots: list[str],
        readable_roots: list[str],
        env: Mapping[str, str],
    ) -> RunSandbox:
        """Build the run's sandbox. Raises SandboxUnavailable (exit 2) when the kernel cannot
        enforce the policy and `enforce` is not `best-effort`; ValueError for a bad root."""
        home = Path(env.get("HOME") or os.path.expanduser("~"))
        writable = _paths(writable_roots, home)
        readable = _paths(readable_roots, home)
        # Before any child exists: nobody without CAP_SYS_PTRACE may read Mermaid's environ/mem.
        with contextlib.suppress(OSError):
            harden_parent()
        mode = policy_mode(safety_mode, enforce, confine_fs=confine_fs)
        support = probe(env)
        run = cls(enforce=enforce, prepared=None, support=support)
        try:
            if enforce != "off":
                run.tmpdir = Path(tempfile.mkdtemp(prefix="mermaid-run-"))
            try:
                run.guard = (
                    OrphanGuard.start(support.cgroup) if support.platform.startswith("linux") else None
                )
            except OSError as exc:  # PDEATHSIG still covers direct children
                run.warnings.append(f"sandbox: orphan guard unavailable ({exc}); relying on PDEATHSIG")
            policy: SandboxPolicy | None = None
            if mode is not None and run.tmpdir is not None:
                policy = for_mode(
                    mode,
                    project_root=project_root,
                    temp_dir=run.tmpdir,
                    writable_roots=writable,
                    network=not network_denied,
                    home=home,
                    sandbox_full_access=True,
                    readable_roots=readable + runtime_read_roots(env.get("PATH", "")),
                    private=_own_dirs(env, project_root, home),
                )
            if policy is None and network_denied and run.tmpdir is not None:
                policy = network_only(run.tmpdir)  # full_access with --no-network (DESIGN §4 step 1)
            try:
                run.prepared = prepare(policy, guard=run.guard, support=support)
            except SandboxUnavailable as exc:
                if enforce != "best-effort":
                    raise SandboxUnavailable(
                        [
                            *exc.missing,
                            "(run with --sandbox best-effort or --sandbox off to go on without it)",
                        ]
                    ) from None
                run.degraded = exc.missing
                run.warnings.append(
                    f"sandbox degraded (--sandbox best-effort): {'; '.join(exc.missing)}; "
                    "commands run without the kernel sandbox"
                )
                run.prepared = prepare(None, guard=run.guard, support=support)
        except BaseException:
            run.close()
            raise
        return run

    @property
    def confining(self) -> bool:
        """A Landlock/seccomp policy is in force for the children."""
        return self.prepared is not None and self.prepared.policy is not None

    def child_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` with the run's private temp dir as TMPDIR (the shared /tmp counts as outside)."""
        out = dict(env)
        if self.tmpdir is not None:
            for key in ("TMPDIR", "TMP", "TEMP"):
                out[key] = str(self.tmpdir)
        return out

    def describe(self) -> dict[str, object]:
        """For `session_started.sandbox`."""
        info: dict[str, object] = (
            self.prepared.describe() if self.prepared is not None else {"mode": "off", "backend": "none"}
        )
        if self.enforce == "off":
            info["mode"] = "off"
        info["enforce"] = self.enforce
        info["degraded"] = list(self.degraded)
        return info

    def close(self) -> None:
        if self.prepared is not None:
            self.prepared.close()
        remover: threading.Thread | None = None
        if self.guard is not None:
            with contextlib.suppress(Exception):
                if self.guard.stop() and self.tmpdir is not None:
                    # nothing the run started is alive to write there: the directory goes while
                    # the guard exits (each took 1-4 ms of the exit on a busy machine)
                    remover = threading.Thread(target=shutil.rmtree, args=(self.tmpdir, True), daemon=True)
                    remover.start()
                self.guard.close()
            self.guard = None
        if remover is not None:
            remover.join()
        elif self.tmpdir is not None:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
        self.tmpdir = None
