"""Where a shell command writes: resolving a literal target against the working directory, the
project root and `~`, and judging it (hard deny for /etc, /boot, ~/.ssh and raw devices;
`external_access` outside the project and temp dirs; why a recursive delete would wreck the
machine). `_Paths` is the path half of the classifier's `Walker`.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

from mermaid_cli.policy.shell.risk import (
    _SAFE_DEVICES,
    MUTATION,
    Risk,
    _default_home,
    _norm,
    _Verdict,
    sensitive_glob_rule,
    sensitive_write_rule,
)
from mermaid_cli.security.paths import added_dirs


class _Paths:
    def __init__(self, project_root: Path | None, home: Path | None) -> None:
        self.root = _norm(str(project_root)) if project_root is not None else None
        self.home = _norm(str(home if home is not None else _default_home()))

    def write_target(
        self, target: str, v: _Verdict, cwd: str | None, what: str, base: Risk = MUTATION
    ) -> None:
        path = self.resolve(target, cwd)
        if path is not None and _SAFE_DEVICES.match(path):
            return
        if path is not None:
            rule = self._sensitive(path) or (
                sensitive_glob_rule(path, self.home) if glob.has_magic(path) else None
            )
            if rule:
                v.deny(rule)
                return
        v.raise_to(base, f"{what} writes {target}")
        if path is not None and self.root is not None and not self._inside_allowed(path):
            v.raise_to("external_access", f"{what} writes outside the project: {target}")

    def _sensitive(self, path: str) -> str | None:
        return sensitive_write_rule(path, self.home)

    def _inside_allowed(self, path: str) -> bool:
        assert self.root is not None
        tmp = _norm(os.environ.get("TMPDIR", "/tmp"))
        for base in (self.root, *added_dirs(), "/tmp", "/var/tmp", "/dev/shm", tmp):
            if path == base or path.startswith(base.rstrip("/") + "/"):
                return True
        return False

    def resolve(self, target: str, cwd: str | None) -> str | None:
        """Absolute normalised path for a literal target, or None when it cannot be known."""
        t = target
        if t == "~" or t.startswith("~/"):
            t = self.home + t[1:]
        t = re.sub(r"^\$\{?HOME\}?(?=/|$)", lambda _m: self.home, t)
        if cwd is not None:
            t = re.sub(r"^\$\{?PWD\}?(?=/|$)", lambda _m: cwd, t)
        if "$" in t or "`" in t or t.startswith("~"):
            return None
        if not t.startswith("/"):
            base = cwd if cwd is not None else self.root
            if base is None:
                return None
            t = base + "/" + t
        return _norm(t)

    def root_like(self, target: str, cwd: str | None) -> str | None:
        """Why deleting/chmod-ing `target` recursively would wreck the machine or the project."""
        if not target:
            return None
        t = target.rstrip("/") or "/"
        glob_children = t in ("*", ".*") or t.endswith(("/*", "/.*", "/*.*", "/.[!.]*"))
        if glob_children:
            t = (t.rsplit("/", 1)[0] if "/" in t else ".") or "/"
        if re.fullmatch(r"~[A-Za-z0-9_.-]+", t):
            return f"{target} (a home directory)"
        path = self.resolve(t, cwd)
        if path is None:
            return _unresolved_root_like(target, t)
        return self._protected_ancestor(target, path, cwd, t) or _top_or_system(target, path, glob_children)

    def _protected_ancestor(self, target: str, path: str, cwd: str | None, t: str) -> str | None:
        """`path` is /, the home directory, the project root or the working directory, or above one."""
        if path == "/":
            return f"{target} (/)"
        for name, base in (("/", "/"), ("the home directory", self.home), ("the project root", self.root)):
            if base is not None and (path == base or base.startswith(path.rstrip("/") + "/")):
                return f"{target} ({name} or an ancestor of it)"
        if cwd is None and self.root is None and t in (".", "*"):
            return f"{target} (the working directory)"
        if cwd is not None and self.root is None and (path == cwd or cwd.startswith(path.rstrip("/") + "/")):
            return f"{target} (the working directory or an ancestor of it)"
        return None


def _unresolved_root_like(target: str, t: str) -> str | None:
    if t in (".", "..", "./", "../") or t.startswith("../"):
        return f"{target} (the working directory or above)"
    if re.match(r"^\$\{?(?:HOME|PWD)\}?/?$", t):
        return f"{target} (a home or working directory)"
    return None


def _top_or_system(target: str, path: str, glob_children: bool) -> str | None:
    parts = [p for p in path.split("/") if p]
    if len(parts) <= 1 and (not glob_children or parts[0] not in ("tmp", "var")):
        return f"{target} (a top-level directory)"
    if parts and parts[0] in _SYSTEM_DIRS:
        return f"{target} (a system directory)"
    return None


_SYSTEM_DIRS = frozenset("etc boot usr bin sbin lib lib64 sys proc dev".split())
