"""Confined file operations the mutating tools share: read, atomic write, delete, mkdir -p.

All go through the path jail's fd walk (`paths.open_*`), so a symlink swapped in after the check
cannot redirect them. Text is decoded with `surrogateescape` so bytes that are not UTF-8 survive
an edit unchanged.
"""

from __future__ import annotations

import os
import stat

from mermaid_cli.tools.atomic import atomic_write_at
from mermaid_cli.tools.paths import PathRefused, ResolvedPath, open_dir, open_file, open_parent

# Files larger than this are not edited or patched in memory.
MAX_EDIT_BYTES = 16 * 1024 * 1024


class FileTooLarge(Exception):
    pass


def read_bytes(resolved: ResolvedPath, max_bytes: int | None = None) -> bytes | None:
    """The file's bytes, or None when it does not exist. A directory is PathRefused."""
    try:
        fd = open_file(resolved)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise PathRefused(f"{resolved.display} is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise PathRefused(f"{resolved.display} is not a regular file")
        if max_bytes is not None and st.st_size > max_bytes:
            raise FileTooLarge(f"{resolved.display} is {st.st_size} bytes, over the {max_bytes}-byte limit")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_bytes(resolved: ResolvedPath, data: bytes) -> None:
    """Atomically write the file, creating parent directories."""
    dir_fd, name = open_parent(resolved, create=True)
    try:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise PathRefused(f"{resolved.display} is a directory")
        atomic_write_at(dir_fd, name, data)
    finally:
        os.close(dir_fd)


def delete(resolved: ResolvedPath) -> None:
    """Remove a file (or a symlink itself); a directory is PathRefused."""
    dir_fd, name = open_parent(resolved)
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            raise PathRefused(f"{resolved.display} is a directory; delete_file removes files only")
        os.unlink(name, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def make_dirs(resolved: ResolvedPath) -> None:
    os.close(open_dir(resolved, create=True))


def decode(data: bytes) -> tuple[str, bool]:
    """(text, is_utf8). Non-UTF-8 bytes become lone surrogates that `encode` turns back."""
    try:
        return data.decode("utf-8"), True
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="surrogateescape"), False


def encode(text: str) -> bytes:
    try:
        return text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte (from model JSON)
        return text.encode("utf-8", errors="replace")


def count_lines(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)
