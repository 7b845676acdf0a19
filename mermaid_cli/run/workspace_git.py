"""Where a directory's git repository is, found the way git finds it, without running git in the
plain case (issue 23).

Every run's workspace snapshot asks where the repository's index is and where the project sits in
its work tree. `git rev-parse` answers in one process, but a process started while the run's
modules load slows them down (the other core is not free: a 3-turn run measured ~20 ms longer per
process the snapshot started). Most projects are the plain case: a `.git` directory owned by the
user, in the project or above it on the same filesystem, whose config names no other work tree.
That case is read here with a few `stat` calls, and gives what git would say; anything else is
`UNSURE` and the caller asks git itself:

- an environment variable git reads to find or configure the repository (`GIT_DIR`,
  `GIT_WORK_TREE`, `GIT_CEILING_DIRECTORIES`, `GIT_CONFIG_*`, ...);
- a `.git` file (linked worktrees, submodules), a `.git` symlink, a `.git` directory that does not
  look like one (git would skip it), a directory that looks like a bare repository;
- a repository config that mentions a work tree, a bare repository or an include (any of them
  can move the work tree or make the repository bare);
- a directory or `.git` owned by someone else, or `SUDO_UID` set (git's `safe.directory` check);
- a filesystem boundary crossed before a `.git` was found (git stops there), or the directory
  inside a `.git` directory.

No repository at all (the walk reached `/` on one filesystem) is None, as git's "not a git
repository". Nothing here trusts the repository: its config is only searched for reasons to ask
git instead.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal

Unsure = Literal["unsure"]
UNSURE: Final[Unsure] = "unsure"

#: variables git reads to find the repository or its config (any `GIT_CONFIG*` too)
_DISCOVERY_VARS = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
        "GIT_CEILING_DIRECTORIES",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_NAMESPACE",
        "GIT_IMPLICIT_WORK_TREE",
        "SUDO_UID",
    }
)
#: a repository config larger than this is not read (git is asked instead)
_MAX_CONFIG = 64 * 1024
_BARE_FALSE = re.compile(rb"^\s*bare\s*=\s*(false|no|off|0)\s*([#;].*)?$", re.IGNORECASE)


def find_index(root: Path, env: Mapping[str, str]) -> tuple[Path, str] | None | Unsure:
    """The index file of the repository whose work tree holds `root`, and `root`'s path in that
    work tree ("" at its top, else "sub/dir/"), as `git rev-parse --git-path index --show-prefix`
    gives them; None outside any repository; `UNSURE` where git itself must be asked. `env` is the
    environment git would run with."""
    if any(name in _DISCOVERY_VARS or name.startswith("GIT_CONFIG") for name in env):
        return UNSURE
    try:
        start = Path(os.path.realpath(root))
        if ".git" in start.parts:
            return UNSURE
        here = start
        device = os.stat(here).st_dev
        while True:
            found = _git_dir_at(here)
            if found == UNSURE:
                return UNSURE
            if found == "plain":
                prefix = start.relative_to(here).as_posix()
                return here / ".git" / "index", "" if prefix == "." else prefix + "/"
            parent = here.parent
            if parent == here:
                return None  # `/` on the same filesystem, no repository on the way
            if os.stat(parent).st_dev != device:
                return UNSURE  # git stops at a filesystem boundary (it says so; ask it)
            here = parent
    except (OSError, ValueError):
        return UNSURE


def _git_dir_at(directory: Path) -> Literal["plain", "none"] | Unsure:
    """ "plain" when `directory` holds a plain repository's `.git`, "none" when it holds nothing git
    would take as a repository, `UNSURE` otherwise."""
    dot_git = directory / ".git"
    try:
        st = os.lstat(dot_git)
    except FileNotFoundError:
        # git also takes the directory itself as a (bare) repository when it looks like one
        return UNSURE if os.path.lexists(directory / "HEAD") else "none"
    if not stat.S_ISDIR(st.st_mode):
        return UNSURE  # a gitdir file (worktree, submodule), a symlink, anything else
    if not (
        os.path.isfile(dot_git / "HEAD")
        and os.path.isdir(dot_git / "objects")
        and os.path.isdir(dot_git / "refs")
    ):
        return UNSURE  # git would pass over it and look further up: let it
    geteuid = getattr(os, "geteuid", None)  # (none on Windows, where git's check differs)
    if geteuid is None:
        return UNSURE
    uid = geteuid()
    if st.st_uid != uid or os.stat(directory).st_uid != uid:
        return UNSURE  # git's ownership check (safe.directory) decides
    config = _read_regular(dot_git / "config")
    if config is None or len(config) > _MAX_CONFIG or _may_move_work_tree(config):
        return UNSURE
    return "plain"


def _read_regular(path: Path) -> bytes | None:
    """Up to `_MAX_CONFIG` + 1 bytes of a regular file; None for anything else (a FIFO planted as
    `.git/config` must not block the snapshot: opened without blocking, then checked)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, _MAX_CONFIG + 1)
    finally:
        os.close(fd)


def _may_move_work_tree(config: bytes) -> bool:
    """Whether a repository config may name another work tree or make the repository bare: any
    mention of a work tree or an include, or a `bare` that is not plainly false."""
    lowered = config.lower()
    if b"worktree" in lowered or b"include" in lowered:
        return True
    for line in lowered.splitlines():
        if line.strip().startswith(b"bare") and not _BARE_FALSE.match(line):
            return True
    return False


#: a repository config line naming a command git runs on file contents (a filter's `clean`,
#: `smudge` or `process`, a diff driver's `textconv` or `command`, `diff.external`)
_RUNS_COMMAND = re.compile(
    rb"^\s*(clean|smudge|process|textconv|command|external)\s*=", re.IGNORECASE | re.MULTILINE
)


def config_runs_commands(git_dir: Path) -> bool:
    """Whether the repository's own config (`git_dir`'s, or its common dir's for a linked
    worktree) may make git run a command while staging or comparing files, or cannot be read
    whole (an include, a config too large or not a regular file): git must then not be run on
    it for Mermaid's snapshot, outside any sandbox. A repository handed over with its `.git`
    (an archive, a cloned-as-is checkout) is as hostile as its files."""
    try:
        common = _read_regular(git_dir / "commondir") if os.path.lexists(git_dir / "commondir") else None
        base = git_dir / os.fsdecode(common.strip()) if common else git_dir
        config = _read_regular(base / "config")
    except FileNotFoundError:
        return False  # no config of its own
    except OSError:
        return True
    if config is None or len(config) > _MAX_CONFIG or b"include" in config.lower():
        return True
    return _RUNS_COMMAND.search(config) is not None
