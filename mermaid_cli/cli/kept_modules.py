"""The code of the modules a Mermaid process imports, kept in one file per install and
interpreter, so that a later process loads each module's code with one read instead of the
import system's search and its `.pyc` file (issue 23).

Finding and loading a module from source costs the import system about 20 system calls (the
directory cache checks, a `stat` of the source, then open, `fstat`, `ioctl`, `lseek`, reads and
close of the `.pyc`) and its Python-level bookkeeping; a 3-turn run imports ~300 such modules.
Here one file holds their code objects (marshalled, as in a `.pyc`) and an index; a module in the
index is served with one `stat` of its source and one `pread`.

What runs is exactly what the import system would run:

- the file is keyed by the interpreter (version, bytecode magic, optimisation level, executable,
  prefix) and the whole `sys.path`, and it is only used when every directory the import system
  would have searched for its modules (each `sys.path` entry, each package's `__path__`) has the
  modification time it had when the code was kept: a file added or removed anywhere on the way
  (a module that would now shadow a kept one) makes the whole file unused, and then rewritten;
- a module is served only while its source has the size and nanosecond modification time it had
  (stricter than a `.pyc`, which keeps whole seconds), and only where the import system would look
  for it (within its parent's `__path__`); anything else goes the usual way;
- the finder sits just before the path finder, so built-in, frozen and any finder placed before
  it keep their precedence, and only modules the path finder found and the plain source loader
  loaded (from a timestamp-checked `.pyc`) are kept; the loader is that source loader, so
  `__file__`, `__cached__`, `get_source` and resources behave as they do without this.

Only `cli/entry.py` (the console script) installs it. Code is kept at exit, from the `.pyc` files
the import system validated, when a process imported modules the file did not have; nothing is
written when Python is told not to write bytecode (`PYTHONDONTWRITEBYTECODE`). The trust is a
`.pyc`'s: the file lives beside the package's own bytecode.
"""

from __future__ import annotations

import _imp
import importlib._bootstrap_external as _bootstrap_external
import marshal
import os
import sys
from importlib._bootstrap_external import (  # (frozen: always loaded)
    MAGIC_NUMBER,
    PathFinder,
    SourceFileLoader,
    cache_from_source,
    spec_from_file_location,
)
from types import CodeType, ModuleType

#: the import system's own `.pyc` checks (private, stable since Python 3.7; absent: nothing kept)
_classify_pyc = getattr(_bootstrap_external, "_classify_pyc", None)
_validate_timestamp_pyc = getattr(_bootstrap_external, "_validate_timestamp_pyc", None)

TYPE_CHECKING = False  # not typing's: this loads before anything else (cli/entry.py)
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any, TypeGuard

DIRECTORY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "__pycache__")
#: past this many modules the file starts again from what the process that writes it imported
MAX_MODULES = 3000
#: kept files beside each other (one per interpreter and `sys.path`; a few MB each): past this
#: many, writing one removes the least recently written
MAX_FILES = 8
_LENGTH = 8  # bytes of the index's length, after the magic number
_PYC_HEADER = 16  # a `.pyc`'s magic, flags, source mtime and size; its code follows

#: (origin, is a package, source mtime_ns, source size, offset of its code after the index, length)
Entry = tuple[str, bool, int, int, int, int]


class KeptLoader(SourceFileLoader):
    """The source loader, whose `get_code` takes the kept code (falling back to its own)."""

    def __init__(self, fullname: str, path: str, kept: Kept, offset: int, length: int) -> None:
        super().__init__(fullname, path)
        self._kept = kept
        self._at = (offset, length)

    def get_code(self, fullname: str) -> CodeType:
        if fullname == self.name:
            code = self._kept.code(*self._at)
            if code is not None:
                _imp._fix_co_filename(code, self.path)  # type: ignore[attr-defined]  # as the source loader does
                return code
        code = super().get_code(fullname)
        assert isinstance(code, CodeType)
        return code


class Kept:
    """The kept file of this interpreter and `sys.path`: its index, and a meta path finder that
    serves the modules in it while it is valid."""

    def __init__(self, path: str, key: tuple[Any, ...]) -> None:
        self.path = path
        self.key = key
        #: the modules this finder left to the path finder: the only ones it can keep (every module
        #: the path finder loads is asked about here first; one imported before it was in place
        #: is not kept)
        self.passed: list[str] = []
        self.fd = -1
        self.body = 0  # where the code starts in the file: index offsets count from here
        self.modules: dict[str, Entry] = {}
        self.dirs: dict[str, int | None] = {}

    # -- reading ------------------------------------------------------------------------------

    def open(self) -> bool:
        """Read the index; True when it is this interpreter's and every directory is unchanged."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            head = os.pread(fd, len(MAGIC_NUMBER) + _LENGTH, 0)
            if len(head) != len(MAGIC_NUMBER) + _LENGTH or not head.startswith(MAGIC_NUMBER):
                raise ValueError("not a kept-modules file")
            length = int.from_bytes(head[len(MAGIC_NUMBER) :], "little")
            if len(head) + length > os.fstat(fd).st_size:
                raise ValueError("cut short")
            key, dirs, modules = marshal.loads(os.pread(fd, length, len(head)))
            if key != self.key or not isinstance(dirs, dict) or not isinstance(modules, dict):
                raise ValueError("another interpreter's")
        except (OSError, ValueError, EOFError, TypeError, OverflowError):
            os.close(fd)
            return False
        if not _unchanged(dirs):
            os.close(fd)  # a file came or went where modules are searched: nothing is served
            return False
        self.fd, self.dirs, self.modules = fd, dirs, modules
        self.body = len(head) + length
        return True

    def code(self, offset: int, length: int) -> CodeType | None:
        try:
            data = os.pread(self.fd, length, self.body + offset)
            code = marshal.loads(data) if len(data) == length else None
        except (OSError, ValueError, EOFError, TypeError):
            return None
        return code if isinstance(code, CodeType) else None

    # -- the finder ---------------------------------------------------------------------------

    def find_spec(self, name: str, path: Any = None, target: ModuleType | None = None) -> Any:
        spec = self._served(name, path)
        if spec is None:
            self.passed.append(name)  # the usual way: what `save` looks at
        return spec

    def _served(self, name: str, path: Any) -> Any:
        entry = self.modules.get(name)
        if not _entry(entry):
            return None  # (not in the file, or not an entry `save` would write: the usual way)
        origin, is_package, mtime, size, offset, length = entry
        if path is not None and _searched_in(origin, is_package) not in path:
            return None  # its parent's __path__ is not what it was
        try:
            st = os.stat(origin)
        except OSError:
            return None
        if st.st_mtime_ns != mtime or st.st_size != size:
            return None
        return spec_from_file_location(
            name,
            origin,
            loader=KeptLoader(name, origin, self, offset, length),
            submodule_search_locations=[os.path.dirname(origin)] if is_package else None,
        )

    def invalidate_caches(self) -> None:
        pass

    # -- writing ------------------------------------------------------------------------------

    def save(self) -> None:
        """Keep the code of the modules this process imported the usual way, with what is kept.
        The file is written a module at a time: holding its 5-12 MB whole (and a copy to join
        it) was a first run's peak RSS, at its very end (issue 23: RSS flat over a long run)."""
        added = _newly_imported(self.passed)
        if not added:
            return
        changed = not _unchanged(self.dirs)
        # what was kept stays, unless something changed during the run: then only what this
        # process saw is kept
        old = {} if changed else {n: e for n, e in self.modules.items() if n not in added and _entry(e)}
        if len(old) + len(added) > MAX_MODULES:
            old = {name: entry for name, entry in old.items() if name in sys.modules}
        dirs = set(sys.path) | (set() if changed else set(self.dirs))
        for name in added:
            dirs |= _searched(name)
        index: dict[str, Entry] = {}
        at = 0
        for name, (origin, is_package, mtime, size, _offset, length) in old.items():
            index[name] = (origin, is_package, mtime, size, at, length)
            at += length
        for name, pyc in added.items():
            index[name] = (pyc.origin, pyc.is_package, pyc.mtime_ns, pyc.size, at, pyc.length)
            at += pyc.length
        marks = {directory: _mtime(directory) for directory in sorted(dirs)}
        head = marshal.dumps((self.key, marks, index))
        from pathlib import Path

        from mermaid_cli.core.cache_files import write_pieces

        write_pieces(Path(self.path), self._pieces(head, old, added))

    def _pieces(
        self, head: bytes, old: dict[str, Entry], added: dict[str, _Pyc]
    ) -> Iterator[bytes | memoryview]:
        """The file's bytes in order; ValueError (nothing is written) when a code is not what the
        index says: a kept entry cut short, a `.pyc` rewritten since it was checked."""
        yield b"".join([MAGIC_NUMBER, len(head).to_bytes(_LENGTH, "little"), head])
        for _name, (_origin, _is_package, _mtime, _size, offset, length) in old.items():
            data = os.pread(self.fd, length, self.body + offset)
            if len(data) != length:
                raise ValueError("a kept entry is cut short")
            yield data
        for pyc in added.values():
            with open(pyc.path, "rb") as file:
                data = file.read()
            if data[:_PYC_HEADER] != pyc.header or len(data) - _PYC_HEADER != pyc.length:
                raise ValueError(f"{pyc.path} changed while it was kept")
            yield memoryview(data)[_PYC_HEADER:]


def _entry(entry: object) -> TypeGuard[Entry]:
    """An index entry has the shape `save` writes."""
    return (
        isinstance(entry, tuple)
        and len(entry) == 6
        and isinstance(entry[0], str)
        and all(isinstance(n, int) for n in entry[1:])
    )


class _Pyc:
    """A module's validated `.pyc`: what the index records, and the header its code is read back
    against when the file is written."""

    def __init__(
        self, origin: str, is_package: bool, mtime_ns: int, size: int, path: str, header: bytes, length: int
    ) -> None:
        self.origin, self.is_package, self.mtime_ns, self.size = origin, is_package, mtime_ns, size
        self.path, self.header, self.length = path, header, length


def _newly_imported(names: Iterable[str]) -> dict[str, _Pyc]:
    """Those of `names` the plain source loader loaded in this process, with their validated
    `.pyc`s."""
    out: dict[str, _Pyc] = {}
    for name in names:
        spec = getattr(sys.modules.get(name), "__spec__", None)
        if spec is None or type(spec.loader) is not SourceFileLoader or spec.name != name:
            continue
        origin = spec.origin
        if not isinstance(origin, str) or not origin.endswith(".py") or not os.path.isabs(origin):
            continue
        pyc = _validated_pyc(origin, spec.submodule_search_locations is not None)
        if pyc is not None:
            out[name] = pyc
    return out


def _validated_pyc(origin: str, is_package: bool) -> _Pyc | None:
    """`origin`'s `.pyc` when the import system would take it (its own checks: this magic,
    timestamp-checked, the source's seconds and size); else None, as for a hash-checked `.pyc`
    (left to the import system). Only the header is read here; `Kept._pieces` reads the code."""
    if _classify_pyc is None or _validate_timestamp_pyc is None:
        return None  # another Python's internals: keep nothing
    try:
        st = os.stat(origin)
        path = cache_from_source(origin)
        with open(path, "rb") as f:
            header = f.read(_PYC_HEADER)
            length = os.fstat(f.fileno()).st_size - _PYC_HEADER
        details = {"name": origin, "path": origin}
        if length <= 0 or _classify_pyc(header, origin, details) != 0:
            return None
        _validate_timestamp_pyc(header, int(st.st_mtime), st.st_size, origin, details)
    except (OSError, ValueError, TypeError, NotImplementedError, ImportError, EOFError):
        return None
    return _Pyc(origin, is_package, st.st_mtime_ns, st.st_size, path, header, length)


def _searched_in(origin: str, is_package: bool) -> str:
    """The directory the import system finds `origin` in (a package's: above its own)."""
    directory = os.path.dirname(origin)
    return os.path.dirname(directory) if is_package else directory


def _searched(name: str) -> set[str]:
    """Every directory the import system searches for `name`."""
    parent = name.rpartition(".")[0]
    if not parent:
        return set(sys.path)
    return {str(entry) for entry in getattr(sys.modules.get(parent), "__path__", ())}


def _unchanged(dirs: dict[str, int | None]) -> bool:
    """Every directory still has the modification time it had (None: absent) when recorded."""
    return all(_mtime(directory) == mtime for directory, mtime in dirs.items())


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _key() -> tuple[Any, ...] | None:
    """What the kept code depends on besides the sources; None when `sys.path` depends on the
    working directory (a relative entry)."""
    if not all(isinstance(entry, str) and os.path.isabs(entry) for entry in sys.path):
        return None
    before_path_finder = []
    for finder in sys.meta_path:
        if finder is PathFinder:
            break
        before_path_finder.append(f"{type(finder).__module__}.{type(finder).__qualname__}")
    else:
        return None
    return (
        MAGIC_NUMBER,
        sys.version,
        sys.implementation.cache_tag,
        sys.flags.optimize,
        sys.executable,
        sys.prefix,
        tuple(sys.path),
        tuple(before_path_finder),
    )


_installed: Kept | None = None


def install(directory: str = DIRECTORY) -> Kept | None:
    """Serve kept modules from now on (where the kept file is valid) and keep new ones at exit."""
    global _installed
    if _installed is not None:
        return _installed
    key = _key()
    if key is None or sys.implementation.cache_tag is None:
        return None
    import zlib

    digest = format(zlib.crc32(repr(key).encode("utf-8", "backslashreplace")), "08x")
    path = os.path.join(directory, f"{_file_prefix()}{digest}.marshal")
    kept = _installed = Kept(path, key)
    kept.open()  # (no usable file: it serves nothing, and still notes what the path finder loads)
    sys.meta_path.insert(sys.meta_path.index(PathFinder), kept)
    import atexit

    atexit.register(save)  # `mermaid exec` ends in os._exit and calls save() itself
    return kept


def save() -> None:
    """Keep the code of what this process imported the usual way (once, at exit)."""
    global _installed
    kept, _installed = _installed, None
    if kept is None or sys.dont_write_bytecode:
        return
    try:
        kept.save()
        _drop_old_files(kept.path)
    except (OSError, ValueError, TypeError):
        pass  # a cache: never a reason to fail the exit


def _file_prefix() -> str:
    """What every kept file of this Python's name starts with (then its key's digest)."""
    return f"kept-modules.{sys.implementation.cache_tag}."


def _drop_old_files(path: str) -> None:
    """Keep at most MAX_FILES kept files beside `path` (every other `sys.path` that ran Mermaid
    wrote one: PYTHONPATH, a script's directory), the least recently written going first."""
    directory, prefix = os.path.dirname(path), _file_prefix()
    with os.scandir(directory) as entries:
        found = [e for e in entries if e.name.startswith(prefix) and e.name.endswith(".marshal")]
    if len(found) <= MAX_FILES:
        return
    found.sort(key=lambda entry: entry.stat().st_mtime_ns, reverse=True)
    for entry in found[MAX_FILES:]:
        if entry.path != path:
            try:
                os.unlink(entry.path)
            except OSError:
                pass
