"""Atomic writes: a temp file in the same directory, fsync, rename over the target. A reader (or a
crash) sees the old content or the new, never a partial file. The directory is not fsynced: that
would only make the rename itself durable (a crash right after may still show the old content,
which the promise allows), and on a slow disk it is a second flush per write (~35 ms here).

The mode of an existing target is kept; a new file gets 0666 minus the umask, like `open()`.
`atomic_write_at` works relative to a directory fd (the path jail's confined walk) so that the
rename replaces whatever is at the name, a swapped-in symlink included, instead of following it.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def atomic_write_at(dir_fd: int, name: str, data: bytes) -> None:
    """Atomically replace `name` inside the directory `dir_fd` with `data`."""
    try:
        old = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    tmp = f".{name[:100]}.{secrets.token_hex(4)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | _CLOEXEC
    fd = os.open(tmp, flags, 0o666, dir_fd=dir_fd)
    try:
        try:
            if old is not None and stat.S_ISREG(old.st_mode):
                os.fchmod(fd, stat.S_IMODE(old.st_mode))
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def atomic_write(path: Path, data: bytes) -> None:
    """Atomically replace `path` with `data`; its parent directory must exist."""
    path = Path(path)
    dir_fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    try:
        atomic_write_at(dir_fd, path.name, data)
    finally:
        os.close(dir_fd)
