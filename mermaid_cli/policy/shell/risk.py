"""The risk order of the shell classifier, the verdict a rule raises, and the interface the
program rules see of the walker (`Walker`, `Call`).

Imports nothing from the rest of `policy.shell`: `words`, `rules` and `classifier` all build on it,
so the dependency between the rules and the walker is one-way (the walker implements `Walker`).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, cast, get_args

Risk = Literal[
    "read_only",
    "low_mutation",
    "file_mutation",
    "shell_mutation",
    "process",
    "network",
    "system_mutation",
    "external_access",
    "destructive",
]

#: least to most risky: the Literal's own order, so the two cannot drift apart
RISK_ORDER: tuple[Risk, ...] = get_args(Risk)

RANK: dict[str, int] = {r: i for i, r in enumerate(RISK_ORDER)}

#: The class of every shell command that changes files, whatever the tool: the shell is not
#: checkpointed like the edit tools, so `auto` sends it to the reviewer. (`low_mutation` and
#: `file_mutation` belong to the edit and memory tools.)

#: The class of every shell command that changes files, whatever the tool: the shell is not
#: checkpointed like the edit tools, so `auto` sends it to the reviewer. (`low_mutation` and
#: `file_mutation` belong to the edit and memory tools.)
MUTATION: Risk = "shell_mutation"


def worst(*risks: str) -> Risk:
    return cast(Risk, max(risks, key=lambda r: RANK[r]))


_SAFE_DEVICES = re.compile(
    r"^/dev/(?:null|zero|full|stdout|stderr|stdin|tty|random|urandom|fd/\d+|shm(?:/.*)?)$"
)
_RAW_DEVICE = re.compile(
    r"^/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk|loop|md|dm-|mapper/|mem$|kmem$|port$|sr|fd\d|nbd)"
)


class _Verdict:
    risk: Risk = "read_only"
    reason: str = ""
    hard: str | None = None

    def raise_to(self, risk: Risk, reason: str) -> None:
        if RANK[risk] > RANK[self.risk]:
            self.risk, self.reason = risk, reason

    def deny(self, rule: str) -> None:
        if self.hard is None:
            self.hard = rule
        self.risk, self.reason = "destructive", rule


def sensitive_write_rule(path: str, home: str | None = None) -> str | None:
    """The hard-deny rule for writing the absolute, normalised `path`, or None when it is fine."""
    path = _norm(path)
    home = _norm(home or _default_home())
    if path == "/etc" or path.startswith("/etc/"):
        return f"writing to {path} (/etc) is hard-denied and cannot be approved"
    if path == "/boot" or path.startswith("/boot/"):
        return f"writing to {path} (/boot) is hard-denied and cannot be approved"
    ssh = home + "/.ssh"
    if path == ssh or path.startswith(ssh + "/") or re.match(r"^(?:/root|/home/[^/]+)/\.ssh(?:/|$)", path):
        return f"writing to {path} (~/.ssh) is hard-denied and cannot be approved"
    if _RAW_DEVICE.match(path):
        return f"writing to the raw device {path} is hard-denied and cannot be approved"
    return None


#: a path of each kind `sensitive_write_rule` denies, beside /etc, /boot and ~/.ssh: what a glob
#: is matched against (`sensitive_glob_rule`)
_DEVICE_SAMPLES = tuple(
    f"/dev/{name}"
    for name in "sda hda vda xvda nvme0n1 mmcblk0 disk0 rdisk0 loop0 md0 dm-0 mapper/x mem kmem port sr0 fd0 nbd0".split()
)


def sensitive_glob_rule(pattern: str, home: str | None = None) -> str | None:
    """The hard-deny rule when the glob `pattern` (absolute, normalised) can name a path
    `sensitive_write_rule` denies: bash expands it as the command runs, so writing `/et?/passwd`
    writes `/etc/passwd`."""
    home = _norm(home or _default_home())
    parts = pattern.strip("/").split("/")
    for root in ("/etc", "/boot", home + "/.ssh", "/root/.ssh", "/home/*/.ssh", *_DEVICE_SAMPLES):
        want = root.strip("/").split("/")
        if len(parts) >= len(want) and all(
            w == "*" or fnmatch.fnmatchcase(w, p) for w, p in zip(want, parts, strict=False)
        ):
            return (
                f"writing to {pattern} (a pattern that can name {root}) is hard-denied and cannot be approved"
            )
    return None


def _default_home() -> str:
    return os.environ.get("HOME") or str(Path("~").expanduser())


def _norm(path: str) -> str:
    p = posixpath.normpath(path)
    if p.startswith("//"):
        p = "/" + p.lstrip("/")
    return p


class Walker(Protocol):
    """What a program rule may ask of the classifier walking the command."""

    def write_target(
        self, target: str, v: _Verdict, cwd: str | None, what: str, base: Risk = MUTATION
    ) -> None:
        """Raise `v` for writing `target` (hard deny for /etc, ~/.ssh…, outside the project…)."""

    def root_like(self, target: str, cwd: str | None) -> str | None:
        """Why a recursive delete/chmod of `target` would wreck the machine or the project."""

    def resolve(self, target: str, cwd: str | None) -> str | None:
        """The absolute normalised path of a literal target, or None when it cannot be known."""

    def judge_argv(self, argv: list[str], v: _Verdict, cwd: str | None) -> None:
        """Judge a nested command line (`find -exec CMD ;`) into `v`, wrappers and all."""


@dataclass(frozen=True)
class Call:
    """One program invocation handed to its rule: `prog` is the program's base name."""

    prog: str
    args: list[str]
    v: _Verdict
    walker: Walker
    cwd: str | None
    argv0: str

    def write(self, target: str, what: str, base: Risk = MUTATION) -> None:
        self.walker.write_target(target, self.v, self.cwd, what, base)
