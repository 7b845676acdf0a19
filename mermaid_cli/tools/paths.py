"""The path jail: every path a tool touches resolves (symlinks included) against the project root.

Two layers:
- `resolve_path` decides *where* a path leads (inside the project or not) at check time;
- `open_dir` / `open_file` then reach the resolved location with an `openat`-style walk from the
  root's directory fd, one component at a time with `O_NOFOLLOW`. The resolved path contains no
  symlinks, so a component that has become a symlink since the check (a swap race) makes the walk
  fail instead of escaping. On Linux the opened fd is also checked through `/proc/self/fd`.

External access (a path outside the project) goes through `check_external`, the single place the
run's policy gate answers: it refuses, unless the run set one of these on the `ToolContext`:
- `ctx.external_access`: a callable `(ResolvedPath, action) -> str | None` (or an awaitable of
  it) returning None to allow or a reason to refuse (the gate's grant check);
- `ctx.allow_external = True`: allow everything (tests).
"""

from __future__ import annotations

import errno
import inspect
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mermaid_cli.security.paths import PathRefused as PathRefused  # the one class, re-exported
from mermaid_cli.security.paths import fd_path, locate

if TYPE_CHECKING:
    from mermaid_cli.tools.base import ToolContext

# POSIX only (Linux, macOS): the confined walk needs dir fds, O_DIRECTORY and O_NOFOLLOW.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class ResolvedPath:
    """A tool's path argument, resolved against the project root."""

    #: absolute, symlinks resolved
    path: Path
    #: inside the project root (the root itself included)
    inside: bool
    #: posix path relative to the root when inside ("." for the root), else the absolute path
    rel: str
    #: the resolved project root
    root: Path

    @property
    def display(self) -> str:
        return self.rel

    def anchor_and_parts(self) -> tuple[str, list[str]]:
        """Where the confined walk starts and the components below it."""
        if self.inside and not os.path.isabs(self.rel):  # an --add-dir path walks from "/"
            parts = [] if self.rel == "." else self.rel.split("/")
            return str(self.root), parts
        return self.path.anchor or "/", list(self.path.parts[1:])


def is_url(path: str) -> bool:
    low = path.strip().lower()
    return low.startswith("http://") or low.startswith("https://")


def resolve_path(root: Path, path: str, *, follow_final: bool = True) -> ResolvedPath:
    """Resolve `path` (relative to `root`, or absolute) with symlinks followed, through the one
    project-membership function (`security.paths.locate`) the gate uses too. `follow_final=False`
    keeps a final symlink itself (what a delete removes)."""
    if is_url(path):
        raise PathRefused(f"{path[:200]} is a URL, not a file path; use web_fetch to read web pages")
    found = locate(root, path, follow_final=follow_final)
    root_real = str(found.root)
    target = str(found.path)
    # an --add-dir file is shown (and reported in files_changed) by its absolute path
    rel = (
        os.path.relpath(target, root_real).replace(os.sep, "/")
        if found.inside and not found.added
        else target
    )
    return ResolvedPath(path=found.path, inside=found.inside, rel=rel, root=found.root)


def external_refusal_message(resolved: ResolvedPath) -> str:
    return f"{resolved.path} is outside the project (external access is not allowed)"


async def check_external(ctx: ToolContext, resolved: ResolvedPath, action: str) -> str | None:
    """None when the tool may go on; else the refusal the model sees. The policy issue's gate."""
    if resolved.inside:
        return None
    if ctx.allow_external:
        return None
    gate = ctx.external_access
    if gate is not None:
        verdict = gate(resolved, action)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        return verdict
    return external_refusal_message(resolved)


async def resolve_for_tool(
    ctx: ToolContext, path: str, action: str, *, follow_final: bool = True
) -> ResolvedPath:
    """Resolve and pass the external-access check, or raise PathRefused. `action` is the
    operation: "read", "create", "modify", "delete" (or "write": create or modify)."""
    resolved = resolve_path(ctx.project_root, path, follow_final=follow_final)
    # the gate judged its own resolution of this path; a symlink swapped since is judged here
    refusal = ctx.path_rules(str(resolved.path), action) if ctx.path_rules is not None else None
    if refusal is not None:
        raise PathRefused(refusal)
    refusal = await check_external(ctx, resolved, action)
    if refusal is not None:
        raise PathRefused(refusal)
    return resolved


# --- confined access -------------------------------------------------------------------------


def _raced(resolved: ResolvedPath) -> PathRefused:
    return PathRefused(f"{resolved.display} changed while being accessed (a symlink appeared); refused")


def _verify_fd(fd: int, resolved: ResolvedPath, expected: str) -> None:
    """Belt and braces on Linux: the kernel's own idea of where the fd points."""
    actual = fd_path(fd)
    if actual is None:
        return
    if actual != expected and not actual.startswith(expected.rstrip("/") + "/"):
        raise _raced(resolved)


def open_dir(resolved: ResolvedPath, parts: list[str] | None = None, create: bool = False) -> int:
    """An fd of the directory reached by walking `parts` (default: all of `resolved`) from its
    anchor without following symlinks. `create` makes missing directories (mkdir -p)."""
    anchor, all_parts = resolved.anchor_and_parts()
    if parts is None:
        parts = all_parts
    fd = os.open(anchor, _DIR_FLAGS)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = _open_dir_component(part, fd, resolved)
            except OSError as exc:
                raise _translate(exc, resolved, part, fd) from exc
            os.close(fd)
            fd = nxt
        expected = os.path.join(anchor, *parts) if parts else anchor
        _verify_fd(fd, resolved, expected)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _open_dir_component(part: str, dir_fd: int, resolved: ResolvedPath) -> int:
    try:
        return os.open(part, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise _translate(exc, resolved, part, dir_fd) from exc


def _translate(exc: OSError, resolved: ResolvedPath, part: str, dir_fd: int) -> OSError | PathRefused:
    # O_NOFOLLOW on a symlink: ELOOP (Linux) / EMLINK (BSD); O_DIRECTORY|O_NOFOLLOW on a symlink
    # to a directory: ENOTDIR. The resolved path had no symlinks, so one now is a swap.
    if exc.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
        try:
            if stat.S_ISLNK(os.stat(part, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                return _raced(resolved)
        except OSError:
            pass
        if exc.errno != errno.ENOTDIR:
            return _raced(resolved)
    return exc


def open_parent(resolved: ResolvedPath, create: bool = False) -> tuple[int, str]:
    """(fd of the parent directory, final name) for a file path; the root itself has no parent."""
    _anchor, parts = resolved.anchor_and_parts()
    if not parts:
        raise PathRefused(f"{resolved.display} is a directory")
    return open_dir(resolved, parts[:-1], create=create), parts[-1]


# O_NONBLOCK: opening a FIFO for reading must not hang the run (no effect on regular files)
READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)


def open_file(resolved: ResolvedPath, flags: int = READ_FLAGS, mode: int = 0o666) -> int:
    """Open the resolved path without following a symlink anywhere on the way. A directory is
    opened too (for reading only); callers fstat the fd and refuse what is not a regular file."""
    _anchor, parts = resolved.anchor_and_parts()
    if not parts:
        return open_dir(resolved)
    parent, name = open_parent(resolved)
    try:
        try:
            fd = os.open(name, flags | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode, dir_fd=parent)
        except OSError as exc:
            raise _translate(exc, resolved, name, parent) from exc
        try:
            _verify_fd(fd, resolved, str(resolved.path))
        except BaseException:
            os.close(fd)
            raise
        return fd
    finally:
        os.close(parent)


def lstat_in(resolved: ResolvedPath) -> os.stat_result | None:
    """lstat of the final component, reached through the confined walk; None when absent."""
    _anchor, parts = resolved.anchor_and_parts()
    if not parts:
        return os.stat(resolved.path)
    try:
        parent, name = open_parent(resolved)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None
    finally:
        os.close(parent)


def is_regular(st: os.stat_result | None) -> bool:
    return st is not None and stat.S_ISREG(st.st_mode)
