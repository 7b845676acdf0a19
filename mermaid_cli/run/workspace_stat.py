"""The workspace snapshot of a tree that is not a git repository: stat signatures, not copies.

The baseline is one `scandir` walk that keeps, per directory, the names of its files and one
64-bit signature of each file's `lstat` (size, mtime, ctime, inode, mode) — about 20 bytes a
file, no content. Comparing walks the tree again: a directory whose names and signatures are
unchanged costs one array comparison; only files whose signature changed are looked at further.

Content before the run is what a diff needs for a modified or deleted file, and it is kept only
where it is cheap (`ContentStore`):
- a small tree (≤ EAGER_FILES files, ≤ EAGER_BYTES) is read into memory at the baseline;
- a file a tool is about to change is read just before (`keep`, wired to the tools' checkpoint
  hook) while it still matches the baseline;
- a "racy" file, whose ctime falls in the same clock tick as the walk (an edit in that tick could
  leave size, mtime and ctime all equal), is read at the baseline so its content decides later.
A file a shell command modified or deleted in a bigger tree has no earlier copy: it is reported as
changed, and the diff carries a note instead of a hunk (use git for exact diffs of large trees).
A signature change without a kept copy counts as a change (`touch` counts); with a copy the
content decides, so a same-size edit with the mtime put back is caught by the ctime, which no
user call can set back.
"""

from __future__ import annotations

import os
import stat
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path

SKIP_DIRS = frozenset(
    {".git", ".mermaid", "__pycache__", "node_modules", ".venv", ".tox", ".mypy_cache", ".pytest_cache"}
)
MAX_FILES = 2_000_000  # past this the walk stops and the snapshot says it is incomplete
MAX_FILE_BYTES = 2 * 1024 * 1024  # larger files are never copied: the diff names them only
KEEP_BUDGET = 32 * 1024 * 1024  # all kept content together (tool writes and racy files)
EAGER_FILES = 1000
EAGER_BYTES = 4 * 1024 * 1024
#: ctime within this of the walk's start: the same coarse clock tick (jiffies are ≤ 10 ms)
RACY_NS = 20_000_000
RACY_COARSE_NS = 2_000_000_000  # a filesystem with whole-second timestamps


def signature(st: os.stat_result) -> int:
    return hash((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode))


@dataclass
class DirEntries:
    """One directory's files: names joined by NUL, their signatures and modes, in scandir order."""

    names: str
    sigs: array[int]
    modes: array[int]

    def as_dict(self) -> dict[str, tuple[int, int]]:
        names = self.names.split("\0") if self.names else []
        return {n: (self.sigs[i], self.modes[i]) for i, n in enumerate(names)}


@dataclass
class Walk:
    dirs: dict[str, DirEntries] = field(default_factory=dict)
    count: int = 0
    complete: bool = True
    #: (rel, size) of files whose ctime is in the walk's own clock tick
    racy: list[tuple[str, int]] = field(default_factory=list)
    total_bytes: int = 0


def walk(root: Path, exclude: frozenset[str], *, start_ns: int | None = None) -> Walk:
    """Every regular file and symlink under `root` (SKIP_DIRS pruned, `exclude` left out)."""
    start = time.time_ns() if start_ns is None else start_ns
    out = Walk()
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            it = os.scandir(root / rel_dir if rel_dir else root)
        except OSError:
            continue
        names: list[str] = []
        sigs = array("q")
        modes = array("I")
        with it:
            for entry in it:
                name = entry.name
                rel = f"{rel_dir}/{name}" if rel_dir else name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if name not in SKIP_DIRS:
                            stack.append(rel)
                        continue
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)) or rel in exclude:
                    continue
                names.append(name)
                sigs.append(signature(st))
                modes.append(st.st_mode)
                out.total_bytes += st.st_size
                margin = RACY_COARSE_NS if st.st_ctime_ns % 1_000_000_000 == 0 else RACY_NS
                if st.st_ctime_ns >= start - margin:
                    out.racy.append((rel, st.st_size))
        if names:
            out.dirs[rel_dir] = DirEntries("\0".join(names), sigs, modes)
            out.count += len(names)
            if out.count > MAX_FILES:
                out.complete = False
                break
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
        self.base = walk(root, exclude)
        self.store = ContentStore()
        self.racy = {rel for rel, _ in self.base.racy}
        self.racy_dirs = {rel.rpartition("/")[0] for rel in self.racy}
        if self.base.count <= EAGER_FILES and self.base.total_bytes <= EAGER_BYTES:
            for rel_dir, entries in self.base.dirs.items():
                for name in entries.names.split("\0"):
                    rel = f"{rel_dir}/{name}" if rel_dir else name
                    self.store.put(rel, root / rel, 0)
        for rel, size in self.base.racy:
            self.store.put(rel, root / rel, size)

    @property
    def complete(self) -> bool:
        return self.base.complete

    def _base_entry(self, rel: str) -> tuple[int, int] | None:
        rel_dir, _, name = rel.rpartition("/")
        entries = self.base.dirs.get(rel_dir)
        if entries is None:
            return None
        return entries.as_dict().get(name)

    def keep(self, paths: list[Path]) -> None:
        """Read the files a tool is about to change, while they still hold their baseline content."""
        for path in paths:
            try:
                rel = Path(os.path.realpath(path.parent), path.name).relative_to(self.root).as_posix()
                st = os.lstat(path)
            except (ValueError, OSError):
                continue
            base = self._base_entry(rel)
            if base is not None and base[0] == signature(st):
                self.store.put(rel, path, st.st_size)

    def compare(self) -> list[Change]:
        now = walk(self.root, self.exclude)
        changes: list[Change] = []
        for rel_dir in sorted(set(now.dirs) | set(self.base.dirs)):
            old, new = self.base.dirs.get(rel_dir), now.dirs.get(rel_dir)
            same = old is not None and new is not None and old.names == new.names and old.sigs == new.sigs
            if same and rel_dir not in self.racy_dirs:
                continue
            a = old.as_dict() if old is not None else {}
            b = new.as_dict() if new is not None else {}
            for name in sorted(set(a) | set(b)):
                rel = f"{rel_dir}/{name}" if rel_dir else name
                before, after = a.get(name), b.get(name)
                if before is None and after is not None:
                    changes.append(Change(rel, "created", None, after[1]))
                elif after is None and before is not None:
                    changes.append(Change(rel, "deleted", before[1], None))
                elif before is not None and after is not None:
                    if before[0] == after[0] and rel not in self.racy:
                        continue
                    kept = self.store.get(rel)
                    if kept is not None and before[1] == after[1] and kept == read_content(self.root / rel):
                        continue  # touched, or racy and untouched: the content decides
                    changes.append(Change(rel, "modified", before[1], after[1]))
        return changes
