"""`<project>/.mermaid/NAME/`: Mermaid's local run history (conversations, batch artifacts), kept
out of git by `.mermaid/.gitignore`, which lists each such directory and ignores itself — the rest
of `.mermaid/` (config, skills, commands) is the project's to commit.

A repository is hostile: a committed symlink at `.mermaid`, `.mermaid/NAME` or `.mermaid/.gitignore`
must not make Mermaid itself (outside any sandbox) write elsewhere. The directories must be real
directories (`lstat`), and `.gitignore` is only ever appended to, through `O_NOFOLLOW`, and left
alone when it is not a plain UTF-8 file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_HEADER = "# Mermaid's local run history stays out of git\n"


def local_dir(project_root: Path, name: str) -> Path:
    """`.mermaid/NAME`, made if missing, and listed in `.mermaid/.gitignore` (which ignores itself
    too, so `git status` after a run shows only the agent's changes). NotADirectoryError when
    `.mermaid` or `.mermaid/NAME` is not a real directory (a symlink to elsewhere)."""
    own = _real_dir(project_root / ".mermaid")
    directory = _real_dir(own / name)
    _list_in_gitignore(own / ".gitignore", name)
    return directory


def _real_dir(path: Path) -> Path:
    """`path`, made if missing; NotADirectoryError unless it is a directory itself (not a link)."""
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    if not stat.S_ISDIR(os.lstat(path).st_mode):
        raise NotADirectoryError(
            errno.ENOTDIR,
            f"{path} is not a directory (a symlink?): Mermaid keeps its run history only inside the "
            "project (remove it, or run with --ephemeral)",
        )
    return path


def _list_in_gitignore(gitignore: Path, name: str) -> None:
    """Append what is missing; a symlink, a non-UTF-8 or unreadable file is left as it is."""
    flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(gitignore, flags, 0o644)
    except OSError:  # ELOOP: a symlink
        return
    with os.fdopen(fd, "r+b") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return
        try:
            text = f.read(1 << 20).decode("utf-8")
        except UnicodeDecodeError:
            return
        lines = text.splitlines()
        wanted = [entry for entry in (f"{name}/", ".gitignore") if entry not in lines]
        if not wanted:
            return
        head = _HEADER if not text else ("" if text.endswith("\n") else "\n")
        f.write((head + "".join(f"{entry}\n" for entry in wanted)).encode("utf-8"))
