"""What changed under a tree as the kernel reports it (Linux inotify, through ctypes): the names a
snapshot's comparison checks instead of a stat of every file (`workspace_stat`) or a `git status`
of the whole tree (`workspace_diff`).

One watch per directory of the baseline (a directory read, no file stat). Events name the
directory (`wd`) and the entry: writes, truncation, chmod and a close after writing make the entry
a file candidate; a create, delete or rename makes the directory a structural candidate (its
entries are compared with the baseline's), and names the entry (a directory entry in `subdirs`,
whose subtree a git snapshot then compares whole). A directory whose watch ends (deleted, or moved away:
its watch then follows the inode to the new name) is reported as gone, so the comparison checks
its subtree as a whole. Nothing here decides what changed: the snapshot checks every candidate
against the baseline and the file's ctime, so a spurious event costs one lstat.

`None` from `drain()` means the kernel lost events (its queue overflowed) or the watch is
unusable: the caller compares the whole tree instead. Limits: inotify does not see writes through
an mmap that outlives the descriptor, nor changes made through a hard link outside the tree; a
tree with more than MAX_WATCHES directories is not watched (the user's own watchers share the
per-user limit).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import weakref
from pathlib import Path

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x1000000
IN_DONT_FOLLOW = 0x2000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

CONTENT = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE
ENTRIES = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
MASK = CONTENT | ENTRIES | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW
MAX_WATCHES = 65_536
#: a tree with at most this many entries is listed in-process when a snapshot begins, a larger one
#: by `find`: a process started while the run's modules load slows them down (issue 23), and
#: walking a small tree costs less than starting one
INLINE_WALK_ENTRIES = 2000
_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)


class WatchUnavailable(OSError):
    pass


class TreeWatch:
    """Watches the baseline's directories (`dirs`: paths relative to `root`, "" for the root)."""

    def __init__(self, root: Path, dirs: list[str]) -> None:
        if len(dirs) > MAX_WATCHES:
            raise WatchUnavailable(f"{len(dirs)} directories: more than {MAX_WATCHES} watches")
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            init, add = libc.inotify_init1, libc.inotify_add_watch
        except (OSError, AttributeError) as exc:
            raise WatchUnavailable(f"no inotify: {exc}") from exc
        add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        self.fd = init(IN_NONBLOCK | IN_CLOEXEC)
        if self.fd < 0:
            raise WatchUnavailable(ctypes.get_errno(), "inotify_init1")
        # a snapshot dropped without close() still gives its instance back (the per-user limit
        # is 128 instances)
        self._release = weakref.finalize(self, os.close, self.fd)
        self.paths: dict[int, str] = {}
        self.files: set[str] = set()
        self.dirs: set[str] = set()
        #: entries that are directories and were created, deleted or moved (by their names)
        self.subdirs: set[str] = set()
        self.gone: set[str] = set()
        self.lost = False
        base = os.fsencode(root)
        for rel in dirs:
            path = base + b"/" + os.fsencode(rel) if rel else base
            wd = add(self.fd, path, MASK)
            if wd in self.paths:  # one directory under two names (a bind mount): events name one
                self.close()
                raise WatchUnavailable(f"{rel} is {self.paths[wd] or '.'} again")
            if wd >= 0:
                self.paths[wd] = rel
                continue
            err = ctypes.get_errno()
            if rel and err in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):
                continue  # gone or unreadable since the walk: the walk's names still stand
            self.close()
            raise WatchUnavailable(err, os.strerror(err))

    def drain(self) -> tuple[set[str], set[str], set[str]] | None:
        """Everything reported so far: (files, directories with entry changes, directories whose
        watch ended), accumulated since the watch began; None once events were lost."""
        while not self.lost and self.fd >= 0:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            except OSError:
                self.lost = True
                break
            self._parse(data)
        if self.lost:
            return None
        return self.files, self.dirs, self.gone

    def _parse(self, data: bytes) -> None:
        offset = 0
        while offset + _HEADER.size <= len(data):
            wd, mask, _cookie, size = _HEADER.unpack_from(data, offset)
            offset += _HEADER.size
            name = data[offset : offset + size].rstrip(b"\0").decode("utf-8", "surrogateescape")
            offset += size
            if mask & IN_Q_OVERFLOW:
                self.lost = True
                return
            where = self.paths.get(wd)
            if where is None:
                continue
            rel = f"{where}/{name}" if where and name else name or where
            if mask & GONE and not name:
                self.gone.add(where)
                continue
            if mask & ENTRIES:
                self.dirs.add(where)
                if mask & IN_ISDIR and name:
                    self.subdirs.add(rel)
            if not mask & IN_ISDIR:
                self.files.add(rel)

    def release(self) -> None:
        """Stop watching, keeping the descriptor: the kernel drops each mark in the background
        here, while closing a descriptor that still has marks waits for that (~15 ms, issue 23).
        A later `drain` says events were lost (a comparison then walks)."""
        if self.fd >= 0:
            libc = ctypes.CDLL(None, use_errno=True)
            for wd in self.paths:
                libc.inotify_rm_watch(self.fd, wd)
        self.paths = {}
        self.lost = True

    def close(self) -> None:
        if self.fd >= 0:
            self._release()  # the kernel drops every watch with the descriptor
            self.fd = -1
