"""The sandbox policy: a typed, pure description of what a child may read, write and reach.

Owned here: `SandboxPolicy` and `for_mode`, which turns a DESIGN §4.1 safety mode into a policy.
Pure: no syscalls, no filesystem access beyond `Path.expanduser`-free path arithmetic and a
directory listing of `/etc/ssh` for host keys; enforcement lives in `linux.py`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Mode = Literal["read_only", "ask", "auto", "full_access"]

# Read (and execute) beneath these; each is skipped when absent.
SYSTEM_READ_ROOTS: tuple[str, ...] = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
    "/proc", "/sys", "/run", "/var/lib", "/var/cache", "/snap", "/nix",
)  # fmt: skip

# Devices a normal program reads and writes (discard devices, randomness, the terminal). Not
# the whole of /dev: a raw disk is readable by uid 0 even without capabilities.
DEVICE_PATHS: tuple[str, ...] = (
    "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
    "/dev/ptmx", "/dev/pts",
)  # fmt: skip

# Secrets beneath $HOME, refused even though $HOME is readable.
HOME_SECRETS: tuple[str, ...] = (
    ".ssh", ".aws", ".azure", ".config/gcloud", ".config/gh", ".config/hub", ".gnupg", ".netrc",
    ".docker", ".kube", ".git-credentials", ".config/git/credentials", ".npmrc", ".pypirc",
    ".config/mermaid", ".local/share/mermaid", ".local/share/keyrings", ".password-store", ".vault-token", ".terraform.d",
    ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
)  # fmt: skip

# System files that hold secrets a uid-0 child could otherwise read.
SYSTEM_SECRETS: tuple[str, ...] = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssl/private",
    "/etc/sudoers", "/etc/sudoers.d",
)  # fmt: skip

#: read-only beneath every writable root but the temp dir (the project, `--add-dir` directories,
#: `[sandbox] writable_roots`): what lands there runs later outside any sandbox (git hooks,
#: `core.fsmonitor`, Mermaid's project config and skills)
#: a repository's git directory (or the `.git` file that names one)
GIT_DIR_NAME = ".git"
PROTECTED_PROJECT_DIRS: tuple[str, ...] = (GIT_DIR_NAME, ".mermaid")


def protected_within(roots: tuple[Path, ...]) -> tuple[Path, ...]:
    """The protected directories (`PROTECTED_PROJECT_DIRS`) of each of `roots`."""
    return tuple(root / name for root in roots for name in PROTECTED_PROJECT_DIRS)


@dataclass(frozen=True)
class SandboxPolicy:
    """What the kernel lets a sandboxed child do. Paths are absolute; order is irrelevant.

    - `readable`: read (and execute) beneath these.
    - `writable`: read and write beneath these.
    - `read_only_within_writable`: writes refused although beneath a writable root.
    - `network`: False allows only AF_UNIX sockets (no TCP/UDP/raw/netlink/...).
    - `deny_read`: refused although beneath a readable (or writable) root.
    - `devices`: device files (or directories of them) readable, writable and ioctl-able.
    - `temp_dir`: the run's private temp dir (writable); children get it as TMPDIR.
    - `keep_capabilities`: capability numbers a uid-0 child keeps (default: none).
    - `metadata_changes`: False refuses chmod/chown/utimes/xattrs everywhere (seccomp), since
      Landlock does not mediate them; `read_only` sets it.
    """

    readable: tuple[Path, ...]
    writable: tuple[Path, ...]
    read_only_within_writable: tuple[Path, ...] = ()
    network: bool = False
    deny_read: tuple[Path, ...] = ()
    devices: tuple[Path, ...] = field(default_factory=lambda: tuple(Path(p) for p in DEVICE_PATHS))
    temp_dir: Path | None = None
    mode: str = "custom"
    keep_capabilities: tuple[int, ...] = ()
    metadata_changes: bool = True

    def __post_init__(self) -> None:
        for name in ("readable", "writable", "read_only_within_writable", "deny_read", "devices"):
            for p in getattr(self, name):
                if not Path(p).is_absolute():
                    raise ValueError(f"SandboxPolicy.{name}: {p} is not absolute")
        if 19 in self.keep_capabilities:  # CAP_SYS_PTRACE would reach Mermaid's memory
            raise ValueError("SandboxPolicy.keep_capabilities may not keep CAP_SYS_PTRACE")

    @classmethod
    def for_mode(
        cls,
        mode: Mode,
        *,
        project_root: Path,
        temp_dir: Path,
        writable_roots: tuple[Path, ...] = (),
        network: bool = False,
        home: Path | None = None,
        sandbox_full_access: bool = False,
        readable_roots: tuple[Path, ...] = (),
    ) -> SandboxPolicy | None:
        return for_mode(
            mode,
            project_root=project_root,
            temp_dir=temp_dir,
            writable_roots=writable_roots,
            network=network,
            home=home,
            sandbox_full_access=sandbox_full_access,
            readable_roots=readable_roots,
        )


def runtime_read_roots(path_env: str | None = None) -> tuple[Path, ...]:
    """Directories a command needs to read beyond the system locations to run the tools it was
    given: the running interpreter's prefixes (a venv or toolchain under /work, /home/runner,
    /tmp...) and every absolute directory on PATH, so `python3`/`pytest` from the job's venv work
    inside the sandbox. `/` itself is never granted (it would expose everything)."""
    found: list[Path] = []
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)]
    raw_path = os.environ.get("PATH", "") if path_env is None else path_env
    candidates += raw_path.split(os.pathsep)
    for entry in candidates:
        if not entry or not os.path.isabs(entry):
            continue  # a relative PATH entry would be resolved against each command's cwd
        real = Path(os.path.realpath(entry))
        if real != Path("/") and real.is_dir() and real not in found:
            found.append(real)
    return tuple(found)


def _home_secrets(home: Path) -> tuple[Path, ...]:
    return tuple(home / s for s in HOME_SECRETS)


def secret_paths(home: Path) -> tuple[Path, ...]:
    """What no process started for the model may read outside `full_access`: `home`'s secrets
    (`HOME_SECRETS`) and the system's (`SYSTEM_SECRETS`, SSH host keys)."""
    return _home_secrets(home) + _system_secrets()


def _system_secrets() -> tuple[Path, ...]:
    found = [Path(p) for p in SYSTEM_SECRETS]
    try:
        found += [Path("/etc/ssh") / n for n in os.listdir("/etc/ssh") if n.endswith("_key")]
    except OSError:
        pass
    return tuple(found)


def for_mode(
    mode: Mode,
    *,
    project_root: Path,
    temp_dir: Path,
    writable_roots: tuple[Path, ...] = (),
    network: bool = False,
    home: Path | None = None,
    sandbox_full_access: bool = False,
    readable_roots: tuple[Path, ...] = (),
    private: tuple[Path, ...] = (),
) -> SandboxPolicy | None:
    """The DESIGN §4.1 policy for `mode`; None for `full_access` unless `sandbox_full_access`.
    `private`: more paths no child may read, beside the secrets (Mermaid's own relocated dirs).

    `read_only`: read the project, `$HOME` (minus its secrets) and system locations; write only
    `temp_dir`; no network whatever `network` says. `ask`/`auto`: also write the project,
    `temp_dir` and `writable_roots`, with their `.git/` and `.mermaid/` read-only (the project's
    and each writable root's); network as given.
    `full_access` with `sandbox_full_access` (the `--sandbox` flag) is the `auto` policy.
    `readable_roots` are read (and execute) grants added in every mode, e.g. `runtime_read_roots()`
    for a toolchain outside the system locations.
    """
    if mode == "full_access":
        if not sandbox_full_access:
            return None
        mode = "auto"
    if mode not in ("read_only", "ask", "auto"):
        raise ValueError(f"unknown safety mode {mode!r}")
    project = Path(os.path.abspath(project_root))
    tmp = Path(os.path.abspath(temp_dir))
    home_dir = Path(os.path.abspath(home if home is not None else Path(os.environ.get("HOME", "/root"))))
    readable = [Path(p) for p in SYSTEM_READ_ROOTS] + [home_dir, project]
    readable += [Path(os.path.abspath(p)) for p in readable_roots]
    deny = secret_paths(home_dir) + tuple(Path(os.path.abspath(p)) for p in private)
    if mode == "read_only":
        return SandboxPolicy(
            readable=tuple(readable),
            writable=(tmp,),
            network=False,
            deny_read=deny,
            temp_dir=tmp,
            mode="read_only",
            metadata_changes=False,
        )
    extra = tuple(Path(os.path.abspath(p)) for p in writable_roots)
    return SandboxPolicy(
        readable=tuple(readable),
        writable=(project, tmp, *extra),
        read_only_within_writable=protected_within((project, *extra)),
        network=network,
        deny_read=deny,
        temp_dir=tmp,
        mode=mode,
    )
