"""The workspace snapshot of a tree that is not a git repository: stat records, not copies.

The baseline is one walk (`find -printf`, in its own process; a Python walker without GNU find)
that keeps one short record a file: size, mtime, ctime, inode, permissions, type, path — about
80 bytes a file, no content. Comparing walks again and takes the set difference of the records:
only files whose record changed are looked at further.

Content before the run is what a diff needs for a modified or deleted file, and it is kept only
where it is cheap (`ContentStore`):
- a small tree (<= EAGER_FILES files, <= EAGER_BYTES) is read into memory at the baseline;
- a file a tool is about to change is read just before (`keep`, wired to the tools' checkpoint
  hook) while its stat still matches the baseline;
- a "racy" file, whose ctime falls in the walk's own clock tick (an edit in that tick could leave
  size, mtime and ctime all equal), is read at the baseline so its content decides later.
A file a shell command modified or deleted in a bigger tree has no earlier copy: it is reported as
changed, and the diff carries a note instead of a hunk (use git for exact diffs of large trees).
A record change without a kept copy counts as a change (`touch` counts); with a copy the content
decides. A same-size edit with the mtime put back is still caught by the ctime, which no user
call can set back.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SKIP_DIRS = frozenset(
    {".git", ".mermaid", "__pycache__", "node_modules", ".venv", ".tox", ".mypy_cache", ".pytest_cache"}
)
MAX_FILE_BYTES = 2 * 1024 * 1024  # larger files are never copied: the diff names them only
KEEP_BUDGET = 32 * 1024 * 1024  # all kept content together (tool writes and racy files)
EAGER_FILES = 1000
EAGER_BYTES = 4 * 1024 * 1024
#: ctime within this of the walk's start: the same coarse clock tick (jiffies are ≤ 10 ms)
RACY_NS = 20_000_000
RACY_COARSE_NS = 2_000_000_000  # a filesystem with whole-second timestamps


FIND_FORMAT = r"%s %T@ %C@ %i %m %y %P\0"


@dataclass
class Walk:
    """One record a file: `size mtime ctime inode perms type path`, NUL-terminated, as `find
    -printf` writes it (the fallback walker writes the same). Paths come last, so they may hold
    spaces; comparing two walks is a set difference of records."""

    raw: bytes
    start_ns: int

    @property
    def count(self) -> int:
        return self.raw.count(b"\0")

    def records(self) -> set[bytes]:
        out = set(self.raw.split(b"\0"))
        out.discard(b"")
        return out

    def racy(self) -> list[tuple[str, int]]:
        """(path, size) of files whose ctime may fall in the walk's own clock tick."""
        first = (self.start_ns - RACY_COARSE_NS) // 1_000_000_000
        last = time.time_ns() // 1_000_000_000 + 1
        seconds = b"|".join(str(s).encode() for s in range(first, last + 1))
        pattern = re.compile(rb"(?:^|\0)(\d+ \S+ (?:" + seconds + rb")\.\d+ [^\0]*)")
        out = []
        for match in pattern.finditer(self.raw):
            rec = parse(match.group(1))
            if rec is None:
                continue
            margin = RACY_COARSE_NS if rec.ctime_ns % 1_000_000_000 == 0 else RACY_NS
            if rec.ctime_ns >= self.start_ns - margin:
                out.append((rec.path, rec.size))
        return out

    def find(self, rel: str) -> Record | None:
        """The record of one path (a scan of the raw bytes, for the few files tools announce)."""
        needle = b" " + rel.encode("utf-8", "surrogateescape") + b"\0"
        at = self.raw.find(needle)
        while at >= 0:
            begin = self.raw.rfind(b"\0", 0, at) + 1
            rec = parse(self.raw[begin : at + len(needle) - 1])
            if rec is not None and rec.path == rel:
                return rec
            at = self.raw.find(needle, at + 1)
        return None


@dataclass(frozen=True)
class Record:
    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int
    perms: int
    kind: str  # f (regular) | l (symlink)
    path: str

    def same_as(self, st: os.stat_result) -> bool:
        return (self.size, self.mtime_ns, self.ctime_ns, self.ino, self.perms) == (
            st.st_size,
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_ino,
            st.st_mode & 0o7777,
        )

    @property
    def mode(self) -> int:
        return (stat.S_IFLNK if self.kind == "l" else stat.S_IFREG) | self.perms


def _ns(text: bytes) -> int:
    sec, _, frac = text.partition(b".")
    return int(sec) * 1_000_000_000 + int((frac[:9] or b"0").ljust(9, b"0"))


def parse(rec: bytes) -> Record | None:
    parts = rec.split(b" ", 6)
    if len(parts) != 7:
        return None
    try:
        return Record(
            int(parts[0]),
            _ns(parts[1]),
            _ns(parts[2]),
            int(parts[3]),
            int(parts[4], 8),
            parts[5].decode(),
            parts[6].decode("utf-8", "surrogateescape"),
        )
    except ValueError:
        return None


def walk(root: Path, *, use_find: bool) -> Walk:
    """Every regular file and symlink under `root`, SKIP_DIRS pruned. `find` does the stat calls
    in its own process (C, the other core); the Python walker is the fallback (no GNU find)."""
    start = time.time_ns()
    if use_find:
        prune: list[str] = []
        for name in sorted(SKIP_DIRS):
            prune += ["-o", "-name", name] if prune else ["-name", name]
        cmd = ["find", ".", "-mindepth", "1", "-type", "d", "(", *prune, ")", "-prune", "-o"]
        cmd += ["(", "-type", "f", "-o", "-type", "l", ")", "-printf", FIND_FORMAT]
        proc = subprocess.run(cmd, cwd=root, capture_output=True, timeout=600)
        return Walk(proc.stdout, start)  # unreadable subdirectories are left out, as below
    return Walk(b"".join(_py_records(root)), start)


def find_works(root: Path) -> bool:
    try:
        proc = subprocess.run(
            ["find", ".", "-maxdepth", "0", "-printf", FIND_FORMAT], cwd=root, capture_output=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0 and proc.stdout.endswith(b" d \0")


def _stamp(ns: int) -> bytes:
    return b"%d.%09d0" % divmod(ns, 1_000_000_000)


def _py_records(root: Path) -> list[bytes]:
    out: list[bytes] = []
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            it = os.scandir(root / rel_dir if rel_dir else root)
        except OSError:
            continue
        with it:
            for entry in it:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in SKIP_DIRS:
                            stack.append(rel)
                        continue
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                kind = b"l" if stat.S_ISLNK(st.st_mode) else b"f" if stat.S_ISREG(st.st_mode) else None
                if kind is None:
                    continue
                out.append(
                    b"%d %s %s %d %o %s %s\0"
                    % (
                        st.st_size,
                        _stamp(st.st_mtime_ns),
                        _stamp(st.st_ctime_ns),
                        st.st_ino,
                        st.st_mode & 0o7777,
                        kind,
                        rel.encode("utf-8", "surrogateescape"),
                    )
                )
    return out


def read_content(path: Path) -> bytes | None:
    """A file's bytes, or a symlink's target; None when it cannot be read."""
    try:
        if path.is_symlink():
            return os.readlink(path).encode("utf-8", "surrogateescape")
        return path.read_bytes()
    except OSError:
        return None


class ContentStore:
    """Content of files as they were at the baseline, kept in memory within KEEP_BUDGET."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.used = 0

    def put(self, rel: str, path: Path, size: int) -> None:
        if rel in self.data or size > MAX_FILE_BYTES or self.used + size > KEEP_BUDGET:
            return
        content = read_content(path)
        if content is not None:
            self.data[rel] = content
            self.used += len(content)

    def get(self, rel: str) -> bytes | None:
        return self.data.get(rel)


@dataclass
class Change:
    rel: str
    kind: str  # created | deleted | modified
    old_mode: int | None = None
    new_mode: int | None = None


class StatSnapshot:
    def __init__(self, root: Path, exclude: frozenset[str]) -> None:
        self.root = root
        self.exclude = exclude
        self.use_find = find_works(root)  # one walker for both walks: their records must match
        self.base = walk(root, use_find=self.use_find)
        self.store = ContentStore()
        self.racy = {rel for rel, _ in self.base.racy() if rel not in exclude}
        count = self.base.count
        if count <= EAGER_FILES:
            recs = [r for r in map(parse, self.base.records()) if r is not None and r.path not in exclude]
            if sum(r.size for r in recs) <= EAGER_BYTES:
                for r in recs:
                    self.store.put(r.path, root / r.path, r.size)
        for rel in self.racy:
            rec = self.base.find(rel)
            if rec is not None:
                self.store.put(rel, root / rel, rec.size)

    def keep(self, paths: list[Path]) -> None:
        """Read the files a tool is about to change, while they still hold their baseline content."""
        for path in paths:
            try:
                rel = Path(os.path.realpath(path.parent), path.name).relative_to(self.root).as_posix()
                st = os.lstat(path)
            except (ValueError, OSError):
                continue
            base = self.base.find(rel)
            if rel not in self.store.data and base is not None and base.same_as(st):
                self.store.put(rel, path, base.size)

    def compare(self) -> list[Change]:
        now = walk(self.root, use_find=self.use_find)
        old, new = self.base.records(), now.records()
        gone = {r.path: r for r in map(parse, old - new) if r is not None}
        came = {r.path: r for r in map(parse, new - old) if r is not None}
        changes: list[Change] = []
        for rel in sorted(set(gone) | set(came) | self.racy):
            if rel in self.exclude:
                continue
            before, after = gone.get(rel), came.get(rel)
            if before is None and after is None:  # racy and its stat unchanged: content decides
                kept = self.store.get(rel)
                if kept is None or kept == read_content(self.root / rel):
                    continue
                mode = self._mode_of(rel)
                changes.append(Change(rel, "modified", mode, mode))
            elif before is None and after is not None:
                changes.append(Change(rel, "created", None, after.mode))
            elif after is None and before is not None:
                changes.append(Change(rel, "deleted", before.mode, None))
            elif before is not None and after is not None:
                kept = self.store.get(rel)
                if kept is not None and before.mode == after.mode and kept == read_content(self.root / rel):
                    continue  # touched: the content is what it was
                changes.append(Change(rel, "modified", before.mode, after.mode))
        return changes

    def _mode_of(self, rel: str) -> int | None:
        rec = self.base.find(rel)
        return rec.mode if rec is not None else None
