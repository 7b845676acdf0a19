"""The workspace snapshot of a tree that is not a git repository: names and ctimes, not copies.

Any change to a file — content, mode, a rename onto it, a creation — sets its ctime to "now", and
no user call can set a ctime back. So the baseline needs no stat of any file: it is the list of
names (`find -printf '%y %P'`, which reads directories only; a tree of at most
INLINE_WALK_ENTRIES entries is listed in-process instead, since a process started while the run's
modules load slows them down), plus the moment it finished. What changed since is found one of
two ways, both costing what changed, not what exists (the decision is `workspace_compare`'s): the
kernel's reports (`workspace_watch`: one inotify watch per directory, Linux), or, without them,
one `find -newerct` (its own process: C, the other core) that prints only files and directories
whose ctime is newer.

The edge: a file changed in the same clock tick as the baseline ended (the kernel's file clock is
coarse: a jiffy, or whole seconds on some filesystems) cannot be told from one changed just after,
so it counts as changed (reported too often, never missed). Same size and mtime put back: the
ctime still moved, so the edit is found.

Content before the run is what a diff needs for a modified or deleted file; it is kept only where
it is cheap (`ContentStore`): all of a small tree (<= EAGER_FILES, <= EAGER_BYTES) at the
baseline, and a file a tool is about to change (`keep`, wired to the tools' checkpoint hook) while
its ctime says it is still the baseline's. A file a shell command modified or deleted in a bigger
tree has no earlier copy: it is reported, and the diff carries a note instead of a hunk (use git
for exact diffs of large trees). With a kept copy the content decides (`touch` is no change).
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mermaid_cli.run.workspace_watch import INLINE_WALK_ENTRIES, TreeWatch
from mermaid_cli.security.childenv import helper_env

if TYPE_CHECKING:
    from mermaid_cli.run.workspace_compare import Baseline

SKIP_DIRS = frozenset(
    {".git", ".mermaid", "__pycache__", "node_modules", ".venv", ".tox", ".mypy_cache", ".pytest_cache"}
)
MAX_FILE_BYTES = 2 * 1024 * 1024  # larger files are never copied: the diff names them only
KEEP_BUDGET = 32 * 1024 * 1024  # all kept content together
EAGER_FILES = 1000
EAGER_BYTES = 4 * 1024 * 1024
#: the kernel stamps ctimes from a coarse clock (a jiffy, <= 10 ms) that lags the fine one
TICK_NS = 20_000_000
COARSE_TICK_NS = 2_000_000_000  # a filesystem with whole-second timestamps
NAMES_FORMAT = r"%y %p\0"
CHANGED_FORMAT = r"%y %m %C@ %p\0"


def _prune() -> list[str]:
    names: list[str] = []
    for name in sorted(SKIP_DIRS):
        names += ["-o", "-name", name] if names else ["-name", name]
    # find hoists name tests before every other test, so `-name` would run fnmatch (with a UTF-8
    # conversion) on each of 300,000 files: 0.6 s of find's time. `-printf ""` (a side effect
    # that prints nothing) is a barrier its optimiser does not move them past: directories only.
    return ["(", "-type", "d", "-printf", "", "(", *names, ")", "-prune", ")", "-o"]


def run_find(root: Path, expression: list[str], lead: bytes = b"") -> bytearray:
    """`find` over the tree, split by top-level entry into one process a core (the stat calls of
    a large tree are most of the cost); paths are printed relative to `root`. The output is read
    into one buffer after `lead` (no joined copy: 300,000 names are 7 MB)."""
    try:
        top = sorted(os.listdir(root))
    except OSError:
        return bytearray(lead)
    groups = max(1, min(os.cpu_count() or 1, 4, len(top)))
    procs = []
    for n in range(groups):
        starts = [f"./{name}" for name in top[n::groups]]  # ./: a name may start with "-"
        out = tempfile.TemporaryFile()
        cmd = ["find", *starts, *_prune(), *expression]
        procs.append(
            (subprocess.Popen(cmd, cwd=root, stdout=out, stderr=subprocess.DEVNULL, env=_find_env()), out)
        )
    for proc, _out in procs:
        proc.wait()  # a blocking waitpid: wait(timeout=) polls with sleeps of up to 50 ms
    sizes = [os.fstat(out.fileno()).st_size for _proc, out in procs]
    buf = bytearray(len(lead) + sum(sizes))
    buf[: len(lead)] = lead
    view, at = memoryview(buf), len(lead)
    for (_proc, out), size in zip(procs, sizes, strict=True):
        out.seek(0)
        while size > 0:
            got = out.readinto(view[at : at + size])
            if not got:
                break
            at, size = at + got, size - got
        out.close()
    view.release()
    return buf


def _find_env() -> dict[str, str]:
    return helper_env(os.environ)


def find_works(root: Path) -> bool:
    try:
        proc = subprocess.run(
            ["find", ".", "-maxdepth", "0", "-newerct", "@0", "-printf", CHANGED_FORMAT],
            cwd=root,
            capture_output=True,
            timeout=30,
            env=_find_env(),
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0 and proc.stdout.startswith(b"d ")


def _ns(text: bytes) -> int:
    sec, _, frac = text.partition(b".")
    return int(sec) * 1_000_000_000 + int((frac[:9] or b"0").ljust(9, b"0"))


def _stamp(ns: int) -> bytes:
    return b"%d.%09d0" % divmod(ns, 1_000_000_000)


def _type(mode: int) -> bytes | None:
    if stat.S_ISDIR(mode):
        return b"d"
    if stat.S_ISLNK(mode):
        return b"l"
    return b"f" if stat.S_ISREG(mode) else None


class WalkTooLarge(Exception):
    """A walk met more entries than its budget."""


def _entry_type(entry: os.DirEntry[str]) -> bytes | None:
    """`_type` of what `entry` names (not following a symlink), from its d_type where it has one."""
    if entry.is_symlink():
        return b"l"
    return b"f" if entry.is_file(follow_symlinks=False) else None


def py_walk(root: Path, since_ns: int | None, start: str = "", budget: int | None = None) -> bytes:
    """What the two `find` calls print, for a system without GNU find or a small tree; also the
    walk of one subtree (`start`, relative to `root`) that the comparison checks whole. Past
    `budget` entries (skipped directories' contents not counted) it raises WalkTooLarge."""
    out: list[bytes] = []
    stack = [start]
    seen = 0
    while stack:
        rel_dir = stack.pop()
        try:
            it = os.scandir(root / rel_dir if rel_dir else root)
        except OSError:
            continue
        with it:
            for entry in it:
                seen += 1
                if budget is not None and seen > budget:
                    raise WalkTooLarge(f"more than {budget} entries")
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                    if is_dir and entry.name in SKIP_DIRS:
                        continue
                    if is_dir:
                        stack.append(rel)
                    if since_ns is None:  # the type only: the entry's d_type, no stat where it has one
                        kind = b"d" if is_dir else _entry_type(entry)
                        if kind is not None:
                            out.append(b"%s ./%s\0" % (kind, rel.encode("utf-8", "surrogateescape")))
                        continue
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                kind = _type(st.st_mode)
                if kind is not None and st.st_ctime_ns > since_ns:
                    name = rel.encode("utf-8", "surrogateescape")
                    out.append(b"%s %o %s ./%s\0" % (kind, st.st_mode & 0o7777, _stamp(st.st_ctime_ns), name))
    return b"".join(out)


#: what a walk knows of a file: type (b"f" or b"l"), permission bits, ctime in ns
FileStat = tuple[bytes, int, int]


def parse_records(raw: bytes | bytearray) -> list[tuple[bytes, int, int, str]]:
    """Parse `CHANGED_FORMAT` records: (type, permissions, ctime ns, relative path)."""
    out = []
    for rec in raw.split(b"\0"):
        parts = rec.split(b" ", 3)
        if len(parts) == 4:
            path = parts[3][2:]  # both walkers print ./NAME
            kind, ns = bytes(parts[0]), _ns(bytes(parts[2]))
            out.append((kind, int(parts[1], 8), ns, path.decode("utf-8", "surrogateescape")))
    return out


def lstat_record(path: Path) -> FileStat | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    kind = _type(st.st_mode)
    return (kind, st.st_mode & 0o7777, st.st_ctime_ns) if kind in (b"f", b"l") else None


def dir_entries(path: str) -> dict[str, bytes]:
    """A directory's entries now, by type from the directory itself (no stat): d, f or l."""
    out: dict[str, bytes] = {}
    try:
        with os.scandir(path) as it:
            for entry in it:
                try:
                    if entry.is_symlink():
                        out[entry.name] = b"l"
                    elif entry.is_dir(follow_symlinks=False):
                        out[entry.name] = b"d"
                    elif entry.is_file(follow_symlinks=False):
                        out[entry.name] = b"f"
                except OSError:
                    continue
    except OSError:
        pass  # gone (or unreadable): every baseline entry counts as gone
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
    """Content (and mode) of files as they were at the baseline, in memory within KEEP_BUDGET."""

    def __init__(self) -> None:
        self.data: dict[str, tuple[bytes, int]] = {}
        self.used = 0

    def put(self, rel: str, path: Path) -> None:
        try:
            st = os.lstat(path)
        except OSError:
            return
        if rel in self.data or st.st_size > MAX_FILE_BYTES or self.used + st.st_size > KEEP_BUDGET:
            return
        content = read_content(path)
        if content is not None:
            self.data[rel] = (content, st.st_mode)
            self.used += len(content)

    def get(self, rel: str) -> bytes | None:
        kept = self.data.get(rel)
        return kept[0] if kept is not None else None

    def mode(self, rel: str) -> int | None:
        kept = self.data.get(rel)
        return kept[1] if kept is not None else None


@dataclass
class Change:
    """One file the run created, deleted or modified."""

    rel: str
    kind: str  # created | deleted | modified
    old_mode: int | None = None
    new_mode: int | None = None


class StatSnapshot:
    def __init__(self, root: Path, exclude: frozenset[str], watch: bool = True) -> None:
        self.root = root
        self.exclude = exclude
        # the root's entries, as find lists them (skipped directories left out)
        top = dir_entries(str(root))
        self.top = {name: kind for name, kind in top.items() if kind != b"d" or name not in SKIP_DIRS}
        # every record starts after a NUL: one regex anchors them all; records are `TYPE ./PATH`
        #: find for the whole-tree walks (None: not asked yet); a small tree is walked in-process,
        #: since a process started while the run's modules load slows them down (issue 23)
        self.use_find: bool | None = None
        try:
            self.names = bytearray(b"\0" + py_walk(root, None, budget=INLINE_WALK_ENTRIES))
        except WalkTooLarge:
            self.use_find = find_works(root)  # one walker for both walks
            if self.use_find:
                self.names = run_find(root, ["-printf", NAMES_FORMAT], lead=b"\0")
            else:
                self.names = bytearray(b"\0" + py_walk(root, None))
        self.watch: TreeWatch | None = None
        if watch and sys.platform.startswith("linux"):
            found = re.findall(rb"\0d \./([^\0]*)", self.names)
            dirs = [""] + [d.decode("utf-8", "surrogateescape") for d in found]
            try:
                self.watch = TreeWatch(root, dirs)
            except OSError:
                self.watch = None  # no inotify, or too many directories: compare by walking
        self.baseline: Baseline | None = None  # made at the first comparison, kept for the run
        self.since_ns = time.time_ns()  # any later change stamps a ctime from here on
        self.store = ContentStore()
        if self.names.count(b"\0f ") + self.names.count(b"\0l ") <= EAGER_FILES:
            files = re.findall(rb"\0[fl] \./([^\0]*)", self.names)
            paths = [root / f.decode("utf-8", "surrogateescape") for f in files]
            if sum(p.lstat().st_size for p in paths if p.exists() or p.is_symlink()) <= EAGER_BYTES:
                for path in paths:
                    self.store.put(path.relative_to(root).as_posix(), path)

    def _existed(self, rel: str, kinds: bytes = b"fl") -> bool:
        name = rel.encode("utf-8", "surrogateescape")
        return any(self.names.find(b"\0%c ./%s\0" % (k, name)) >= 0 for k in kinds)

    def changed_since(self, rec_ctime: int) -> bool:
        tick = COARSE_TICK_NS if rec_ctime % 1_000_000_000 == 0 else TICK_NS
        return rec_ctime > self.since_ns - tick

    def keep(self, paths: list[Path]) -> None:
        """Read the files a tool is about to change, while their ctime says they are the baseline's."""
        for path in paths:
            try:
                rel = Path(os.path.realpath(path.parent), path.name).relative_to(self.root).as_posix()
                st = os.lstat(path)
            except (ValueError, OSError):
                continue
            if not self.changed_since(st.st_ctime_ns) and self._existed(rel):
                self.store.put(rel, path)

    def release_watch(self) -> None:
        """No comparison needs the kernel's reports any more: let it drop them now, so that
        `stop_watching` at the end does not wait for it."""
        if self.watch is not None:
            self.watch.release()

    def stop_watching(self) -> None:
        if self.watch is not None:
            self.watch.close()
            self.watch = None

    def _walked(self) -> tuple[dict[str, FileStat | None], set[str], set[str]]:
        """Candidates from one walk of the whole tree: files and directories with a newer ctime."""
        since = self.since_ns - COARSE_TICK_NS
        if self.use_find is None:
            self.use_find = find_works(self.root)
        if self.use_find:
            stamp = _stamp(since).decode()
            raw: bytes | bytearray = run_find(self.root, ["-newerct", f"@{stamp}", "-printf", CHANGED_FORMAT])
        else:
            raw = py_walk(self.root, since)
        files: dict[str, FileStat | None] = {}
        dirs: set[str] = set()
        try:
            if self.changed_since(os.lstat(self.root).st_ctime_ns):
                dirs.add("")
        except OSError:
            pass
        for kind, perms, ctime, rel in parse_records(raw):
            if self.changed_since(ctime):
                if kind == b"d":
                    dirs.add(rel)
                else:
                    files[rel] = (kind, perms, ctime)
        return files, dirs, set()

    def _reported(self) -> tuple[dict[str, FileStat | None], set[str], set[str]] | None:
        """Candidates the kernel reported (see `workspace_watch`), or None: compare by walking."""
        found = self.watch.drain() if self.watch is not None else None
        if found is None:
            self.stop_watching()  # events were lost: every later comparison walks anyway
            return None
        files, dirs, gone = found
        return dict.fromkeys(files), dirs, gone  # `decide` adds to the files only

    def compare(self) -> list[Change]:
        found = self._reported()
        files, dirs, gone = found if found is not None else self._walked()
        from mermaid_cli.run.workspace_compare import Baseline, decide

        if self.baseline is None:
            self.baseline = Baseline(self.names, dict(self.top))
        return [c for c in decide(self, self.baseline, files, dirs, gone) if c.rel not in self.exclude]
