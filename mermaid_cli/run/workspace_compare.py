"""Deciding what changed from a stat snapshot's candidates: the baseline's names against the tree.

Candidates come from a walk (files and directories with a newer ctime) or from the kernel's
reports (`workspace_watch`); either way this costs what the candidates are, not what exists:
- a candidate directory's entries are compared with the baseline's: a name gone is deleted (a
  whole subtree when it was a directory), a new name is created — a new directory is walked whole,
  since a rename keeps the ctimes of everything inside it (`mv src lib` creates `lib/x.py` whose
  ctime is old); a directory whose watch ended is walked whole too (it may be a new one);
- a candidate file that did not exist at the baseline is created whatever its ctime says; one that
  existed changed only if its ctime is newer than the baseline, and when its earlier content was
  kept, only if content or mode differ (`touch` is no change).
The baseline is one bytes blob of `TYPE ./PATH` records: a few lookups are one search of it each;
many go through one pass over it (`Baseline`), so a run that touched a thousand directories does
not search 300,000 records a thousand times. The baseline never changes, so one `Baseline` serves
every comparison of a run (each tool batch compares again, from the start of the run).
"""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING, AnyStr

from mermaid_cli.run.workspace_stat import (
    SKIP_DIRS,
    Change,
    FileStat,
    dir_entries,
    lstat_record,
    parse_records,
    py_walk,
    read_content,
)

if TYPE_CHECKING:
    from mermaid_cli.run.workspace_stat import StatSnapshot

#: more lookups than this in one round are answered by one pass over the baseline (a search
#: of 300,000 names is ~15 ms, a pass ~0.3 s)
FEW = 16


def _enc(rel: str) -> bytes:
    return rel.encode("utf-8", "surrogateescape")


def _dec(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _join(rel_dir: str, name: str) -> str:
    return f"{rel_dir}/{name}" if rel_dir else name


class Baseline:
    """Lookups in the snapshot's names, cached for the run: `children[d]` is what directory `d` held
    at the baseline (a new directory held nothing then)."""

    def __init__(self, names: bytearray, top: dict[str, bytes]) -> None:
        self.names = names
        self.children: dict[str, dict[str, bytes]] = {"": top}  # listed at the baseline

    def load(self, dirs: set[str]) -> None:
        """The baseline's entries of every directory in `dirs` (one pass when there are many)."""
        wanted = {d for d in dirs if d not in self.children}
        if not wanted:
            return
        for d in wanted:
            self.children[d] = {}
        if len(wanted) <= FEW:
            for d in wanted:
                prefix = re.escape(_enc(d) + b"/") if d else b""
                found = re.findall(rb"\0([dfl]) \./" + prefix + rb"([^/\0]+)(?=\0)", self.names)
                self.children[d] = {_dec(name): kind for kind, name in found}
            return
        keys = {_enc(d): d for d in wanted}
        for m in re.finditer(rb"\0([dfl]) \./([^\0]*)", self.names):
            parent, _, name = m.group(2).rpartition(b"/")
            rel_dir = keys.get(parent)
            if rel_dir is not None:
                self.children[rel_dir][_dec(name)] = m.group(1)

    def files_under(self, dirs: set[str]) -> list[str]:
        """Baseline files and symlinks below any of `dirs`, in one search or one pass."""
        tops = {d for d in dirs if not any(a in dirs for a in _ancestors(d))}
        if len(tops) <= FEW:
            found: list[bytes] = []
            for top in tops:
                found += re.findall(rb"\0[fl] \./(" + re.escape(_enc(top) + b"/") + rb"[^\0]*)", self.names)
            return [_dec(rel) for rel in found]
        keys = {_enc(t) for t in tops}
        out = []
        for m in re.finditer(rb"\0[fl] \./([^\0]*)", self.names):
            rel = m.group(1)
            if any(a in keys for a in _ancestors(rel)):
                out.append(_dec(rel))
        return out


def _ancestors(rel: AnyStr) -> list[AnyStr]:
    """`a/b/c` -> `a`, `a/b` (str or bytes)."""
    sep = "/" if isinstance(rel, str) else b"/"
    parts = rel.split(sep)
    return [sep.join(parts[:n]) for n in range(1, len(parts))]


def decide(
    snap: StatSnapshot,
    base: Baseline,
    files: dict[str, FileStat | None],
    dirs: set[str],
    gone: set[str],
) -> list[Change]:
    """Changes, sorted by path. `base`: the snapshot's baseline lookups; `files`: candidate files
    (with what a walk knew of them, or None; added to); `dirs`: directories whose entries may have
    changed; `gone`: directories to check whole."""
    root = str(snap.root)
    deleted: set[str] = set()
    gone_dirs: set[str] = set()  # baseline directories no longer there
    whole = set(gone)
    pending = set(dirs)
    checked: set[str] = set()
    while pending or whole:
        for top in sorted(whole):
            pending.add(top)
            new_tree = top not in gone  # a new directory: nothing below it existed at the baseline
            for kind, perms, ctime, rel in parse_records(py_walk(snap.root, 0, top)):
                if kind == b"d":
                    pending.add(rel)
                    if new_tree:
                        base.children.setdefault(rel, {})
                else:
                    files[rel] = (kind, perms, ctime)
            if new_tree:
                base.children.setdefault(top, {})
        whole = set()
        batch = pending - checked
        pending = set()
        checked |= batch
        base.load(batch)
        for rel_dir in sorted(batch):
            before = base.children[rel_dir]
            now = dir_entries(os.path.join(root, rel_dir) if rel_dir else root)
            for name, kind in before.items():
                if now.get(name) == kind:
                    continue
                rel = _join(rel_dir, name)
                if kind == b"d":
                    gone_dirs.add(rel)
                elif now.get(name) not in (b"f", b"l"):
                    deleted.add(rel)
                else:
                    files.setdefault(rel, None)  # a file became a symlink or back
            for name, kind in now.items():
                if before.get(name) == kind:
                    continue
                rel = _join(rel_dir, name)
                if kind == b"d":
                    if name not in SKIP_DIRS and rel not in checked:
                        whole.add(rel)
                else:
                    files.setdefault(rel, None)
    deleted.update(rel for rel in base.files_under(gone_dirs) if not os.path.lexists(os.path.join(root, rel)))
    changed: dict[str, Change] = {}
    for rel in deleted:
        changed[rel] = Change(rel, "deleted", snap.store.mode(rel), None)
    base.load({rel.rpartition("/")[0] for rel in files})
    for rel, known in files.items():
        if any(part in SKIP_DIRS for part in rel.split("/")[:-1]):
            continue
        record = known if known is not None else lstat_record(snap.root / rel)
        if record is None:
            continue  # gone again (or not a file): a deletion is decided by its directory
        kind, perms, ctime = record
        rel_dir, _, name = rel.rpartition("/")
        mode = (stat.S_IFLNK if kind == b"l" else stat.S_IFREG) | perms
        if base.children[rel_dir].get(name) not in (b"f", b"l"):
            changed[rel] = Change(rel, "created", None, mode)
            continue
        if not snap.changed_since(ctime):
            continue
        old_mode, kept = snap.store.mode(rel), snap.store.get(rel)
        if kept is not None and old_mode == mode and kept == read_content(snap.root / rel):
            continue  # touched: the content is what it was
        changed[rel] = Change(rel, "modified", old_mode, mode)
    return [changed[rel] for rel in sorted(changed)]
