"""The one answer to "where does this path really lead, and is that inside the project?".

Every layer that judges or touches a path asks here: the file tools' jail (`tools/paths.py`),
the gate's view of a call (`policy/requests.py`, `policy/gate.py`) and the checkpoint store
(`store/checkpoints.py`). One function means the gate judges exactly the path the tool will then
write: `~` is expanded, a relative path is taken against the project root, `..` is normalised
and symlinks are followed (a path that does not exist yet is resolved through its deepest
existing ancestor, which is what `os.path.realpath` does component by component).

`follow_final=False` resolves everything but the last component: what `unlink` acts on. A
delete of an in-project symlink is the removal of the link, not of whatever it points to.

Hostile spellings (NUL, lone surrogates, over-long values) raise `PathRefused` with a message
for the model instead of reaching the OS.

`--add-dir DIR` directories count as inside the project too (`set_added_dirs`). They live in a
context variable set once by the runner, so every caller of `locate` — the gate, the file tools'
jail, the shell classifier, checkpoints, subagents — sees them without a new parameter, and they
are scoped to that run's task tree (asyncio copies the context into each task and `to_thread`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

#: longer than any path the kernel accepts (PATH_MAX is 4096 on Linux, 1024 on macOS)
MAX_PATH_CHARS = 4096


class PathRefused(Exception):
    """A path a tool must not use; the message is written for the model."""


@dataclass(frozen=True)
class Located:
    """Where a path really is, and which allowed root holds it."""

    #: absolute, normalised, symlinks resolved (the final component too unless follow_final=False)
    path: Path
    #: inside the project root (the root itself included)
    inside: bool
    #: the resolved root that holds it: the project root, or the `--add-dir` directory
    root: Path
    #: inside through an `--add-dir` directory rather than the project root
    added: bool = False


#: resolved `--add-dir` directories of the run in this context (see the module docstring)
_ADDED_DIRS: ContextVar[tuple[str, ...]] = ContextVar("mermaid_added_dirs", default=())


def added_dirs() -> tuple[str, ...]:
    """The resolved `--add-dir` directories in force (symlinks followed)."""
    return _ADDED_DIRS.get()


def set_added_dirs(dirs: Sequence[str], base: Path) -> tuple[str, ...]:
    """Resolve `dirs` (relative to `base`, `~` expanded, symlinks followed) and make them count as
    inside the project for the rest of this context. PathRefused when one is not a directory."""
    resolved: list[str] = []
    for spelled in dirs:
        check_spelling(spelled)
        real = os.path.realpath(os.path.join(base, os.path.expanduser(spelled)))
        if not os.path.isdir(real):
            raise PathRefused(f"--add-dir {spelled}: not a directory")
        if real == os.sep:
            raise PathRefused(f"--add-dir {spelled}: the whole filesystem cannot be added")
        if real not in resolved:
            resolved.append(real)
    _ADDED_DIRS.set(tuple(resolved))
    return tuple(resolved)


def check_spelling(path: str) -> None:
    """Refuse a path string the OS cannot take or that would not survive JSON encoding."""
    if "\x00" in path:
        raise PathRefused("path contains a NUL byte")
    if len(path) > MAX_PATH_CHARS:
        raise PathRefused(f"path is {len(path)} characters long, over the {MAX_PATH_CHARS}-character limit")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise PathRefused("path contains invalid Unicode (a lone surrogate)") from None
    if path.strip() == "":
        raise PathRefused("path is empty")


def real_root(root: Path | str) -> str:
    return os.path.realpath(os.path.expanduser(str(root)))


def within(root_real: str, target: str) -> bool:
    """`target` (already resolved) is `root_real` or below it."""
    return target == root_real or target.startswith(root_real.rstrip(os.sep) + os.sep)


def fd_path(fd: int) -> str | None:
    """Where the kernel says the file open on `fd` is (`/proc/self/fd`, Linux); None where it
    cannot say. What was opened, not what a path string resolved to a moment before."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def locate(root: Path | str, path: str, *, follow_final: bool = True) -> Located:
    """Resolve `path` (relative to `root`, absolute, or `~`-prefixed) the way the OS will."""
    check_spelling(path)
    root_real = real_root(root)
    # no normpath first: `link/..` is the parent of the link's target, as the kernel sees it
    joined = os.path.join(root_real, os.path.expanduser(path))
    parent, name = os.path.split(joined)
    try:
        if follow_final or name in ("", ".", ".."):  # a trailing `/`, `.` or `..` names no link
            target = os.path.realpath(joined)
        else:
            target = os.path.join(os.path.realpath(parent), name)
    except OSError as exc:
        # realpath's readlink of a component that stopped being a link under it (EINVAL): the
        # path is being changed while it is resolved
        raise PathRefused(f"{path}: changed while being resolved ({exc.strerror or exc})") from None
    if not within(root_real, target):
        for extra in _ADDED_DIRS.get():
            if within(extra, target):
                return Located(path=Path(target), inside=True, root=Path(extra), added=True)
    return Located(path=Path(target), inside=within(root_real, target), root=Path(root_real))


def inside_project(root: Path | str, path: str, *, follow_final: bool = True) -> bool:
    """The path, resolved, is the project root or below it. A bad spelling is not inside."""
    try:
        return locate(root, path, follow_final=follow_final).inside
    except PathRefused:
        return False
