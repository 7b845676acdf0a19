"""The code `dataclasses` and `collections.namedtuple` generate, the string annotations `typing`
compiles (every `from __future__ import annotations` field pydantic reads) and the programs `re`
compiles patterns to, compiled once per install.

Every dataclass builds its `__init__`, `__repr__`, `__eq__` (and, frozen, `__setattr__`,
`__delattr__`, `__hash__`) by compiling Python source it writes at class creation; a run creates
~90 dataclasses before its first model request, and that compiling was ~10% of the instructions
up to it (~1 ms a class on a slow machine). The source is the same every run, so its code
objects are kept, keyed by the source itself, in a file beside the package's bytecode (the
trust of a `.pyc`), and a later process executes the kept code instead of compiling again.

The package ships the entries that importing every one of its modules compiles, for the Python that
wrote them (`SHIPPED`, `python -m mermaid_cli.cli.shipped`): the first run after an install takes
its code from there (~700 compiles, ~25 ms of a cold 3-turn run on a slow machine) and keeps what it
used in its own file.

What runs is exactly what the source compiles to: a source not kept is compiled as before, and a
file that is missing, unreadable or from another Python is ignored. Only the entry point installs
this (`cli.main`); the shims take the place of the `exec`/`eval`/`compile` names those modules look
up, so a future Python that no longer compiles this way simply never calls them.

Regular expressions the same way: `re` parses a pattern and generates its program in Python
(~60 patterns, 7-9 ms of a 3-turn run, issue 23), then hands pattern, flags, program and group
names to `_sre.compile`. Those arguments are kept, keyed by pattern and flags, and a later process
passes the kept ones to `_sre.compile` itself; the stand-in replaces `re._compiler.compile` only
where that function is the one this was written against (Python 3.11-3.13: checked on a probe
pattern at install), and a debug compile or a parsed pattern goes to the original.
"""

from __future__ import annotations
import __future__

import builtins
import collections
import contextlib
import dataclasses
import marshal
import re._compiler as re_compiler  # type: ignore[import-not-found]  # (no stub: internal)
import sys
import typing
from collections.abc import Callable
from importlib._bootstrap_external import MAGIC_NUMBER
from pathlib import Path
from types import CodeType
from typing import Any, TypeGuard

from mermaid_cli.core.cache_files import write_whole

CACHE = Path(__file__).resolve().parents[1] / "__pycache__"
#: the commands that run a task (`run` is `exec`'s alias): their own kept file
RUN_COMMANDS = frozenset({"exec", "run"})


def kept_file(argv: list[str]) -> Path:
    """This install's kept file for the command line `argv` (without the program): one for the
    commands that run a task, one for every other command. A run reads only what runs compiled
    (at most `MAX_KEPT` entries, the most recently used), not what every command ever did (2,300
    in a checkout whose tests run them all: 4-6 ms and ~1,000 page faults of each run; issue 23)."""
    kind = "run" if argv[:1] and argv[0] in RUN_COMMANDS else "other"
    return CACHE / f"generated-code.{kind}.{sys.implementation.cache_tag}.marshal"


#: the one kept file of every command, before runs and other commands had a file each: nothing
#: reads it any more, so the first save beside it removes it (1-2 MB left in an upgraded install)
FORMER_FILE = f"generated-code.{sys.implementation.cache_tag}.marshal"


#: the shipped entries, read when there is no kept file. Not compressed: inflating its 1 MB took
#: longer (~5 ms on a slow machine) than reading it (~2 ms), on a first run's way to its first
#: request (issue 23: <= 0.2 s cold); the wheel compresses it all the same
SHIPPED = Path(__file__).with_name(f"generated_code.{sys.implementation.cache_tag}.marshal")
#: the flag `from __future__ import annotations` (this module's) sets on code it compiles
FUTURE_ANNOTATIONS = __future__.annotations.compiler_flag
#: at most this many entries in a kept file. A save writes its process's own entries first, then
#: those kept before in the order they were (the most recently saved first) up to this many: a
#: run uses ~420, and under the former rule (grow to 3,000, then start again) the test suite's runs
#: left ~2,000 (1.7 MB) that every later run read whole, 3-4 ms of it, to use a fifth (issue 23)
MAX_KEPT = 1000
#: what an entry is kept by: (mode, source) for code, ("re:FLAGS", pattern) for a regex program
Key = tuple[str, str | bytes]
RegexArgs = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]


class GeneratedCode:
    """Code objects by their source, loaded from and saved to one file. Each is kept marshalled
    and read only when its source comes up: the file holds what every command ever compiled, a
    run uses a few hundred of them."""

    def __init__(self, path: Path, shipped: Path | None = None) -> None:
        self.path = path
        self.shipped = shipped
        self._kept: dict[Key, bytes] | None = None  # read at the first class made
        self.used: dict[Key, Any] = {}  # this process's code objects
        self.added = 0
        #: the entries came from the shipped file: at exit this process's own file gets those it used
        self.from_shipped = False

    @property
    def kept(self) -> dict[Key, bytes]:
        if self._kept is None:
            self._kept = _load(self.path)
            if not self._kept and self.shipped is not None:
                self._kept = _load(self.shipped)
                self.from_shipped = bool(self._kept)
        return self._kept

    def _kept_or_made(self, key: Key, fits: Callable[[object], bool], make: Callable[[], Any]) -> Any:
        """This process's object for `key`: used before, else kept (if it still `fits`: an entry
        that does not is made again), else `make()`, which is kept for the next process."""
        value = self.used.get(key)
        if value is not None:
            return value
        kept = self.kept.get(key)
        try:
            value = marshal.loads(kept) if kept is not None else None
        except (ValueError, EOFError, TypeError):
            value = None
        if not fits(value):
            value = make()
            self.kept[key] = marshal.dumps(value)
            self.added += 1
        self.used[key] = value
        return value

    def code(self, source: str, mode: str) -> Any:
        """`source` compiled as `exec`, `eval` or `compile` compile a string for a caller with no
        `__future__` import (dataclasses, collections, typing): not with this module's own
        (`annotations` would leave a dataclass's `__init__` with string annotations)."""
        return self._kept_or_made(
            (mode, source), _plain_code, lambda: compile(source, "<string>", mode, dont_inherit=True)
        )

    def exec(self, source: Any, globals: Any = None, locals: Any = None) -> None:  # noqa: A002, A003
        if isinstance(source, str):
            source = self.code(source, "exec")
        builtins.exec(source, globals, locals)

    def eval(self, source: Any, globals: Any = None, locals: Any = None) -> Any:  # noqa: A002, A003
        if isinstance(source, str):
            source = self.code(source, "eval")
        return builtins.eval(source, globals, locals)

    def compile(  # noqa: A003
        self,
        source: Any,
        filename: str,
        mode: str,
        flags: int = 0,
        dont_inherit: bool = False,
        optimize: int = -1,
    ) -> Any:
        if (
            isinstance(source, str)
            and filename == "<string>"
            and (flags, dont_inherit, optimize) == (0, False, -1)
        ):
            return self.code(source, mode)
        return builtins.compile(source, filename, mode, flags, dont_inherit, optimize)

    def compile_regex(self, p: Any, flags: int = 0) -> Any:
        """`re._compiler.compile`: a pattern's program from the kept arguments of `_sre.compile`."""
        if not isinstance(p, (str, bytes)) or flags & re_compiler.SRE_FLAG_DEBUG:
            return _compile_regex(p, flags)  # a parsed pattern (re.Scanner) or a debug dump
        flags = int(flags)  # (`re` passes a plain int; a direct caller may pass a RegexFlag)
        args: RegexArgs = self._kept_or_made(
            (f"re:{flags}", p), _regex_args, lambda: _regex_program(p, flags)
        )
        final_flags, code, groups, groupindex, indexgroup = args
        return re_compiler._sre.compile(p, final_flags, code, groups, groupindex, indexgroup)

    def save(self) -> None:
        if not self.added and not self.from_shipped:
            return
        kept = self.kept
        # the order of the file is how recently a save used each entry: a process that compiles
        # something again (an entry this bound left out) puts it back at the front
        order = [key for key in self.used if key in kept]
        if not self.from_shipped:  # (the shipped file holds every command's: none of the rest)
            order += [key for key in kept if key not in self.used][: max(0, MAX_KEPT - len(order))]
        write_whole(self.path, dump({key: kept[key] for key in order}))
        self.added = 0
        self.from_shipped = False
        former = self.path.with_name(FORMER_FILE)
        if former != self.path:
            with contextlib.suppress(OSError):
                former.unlink()


_compile_regex = re_compiler.compile


def _plain_code(code: object) -> TypeGuard[CodeType]:
    """A kept entry is code compiled without `annotations` (an entry kept before `code` compiled
    that way is compiled again)."""
    return isinstance(code, CodeType) and not code.co_flags & FUTURE_ANNOTATIONS


def _regex_program(p: str | bytes, flags: int) -> RegexArgs:
    """What `re._compiler.compile(p, flags)` passes to `_sre.compile` after the pattern (the same
    steps, in the same order)."""
    parsed = re_compiler._parser.parse(p, flags)
    code = [int(op) for op in re_compiler._code(parsed, flags)]  # (opcodes are int subclasses)
    groupindex = parsed.state.groupdict
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, i in groupindex.items():
        indexgroup[i] = name
    return flags | parsed.state.flags, code, parsed.state.groups - 1, dict(groupindex), tuple(indexgroup)


def _regex_args(args: object) -> TypeGuard[RegexArgs]:
    """A kept entry has the shape `_regex_program` returns (anything else is compiled again)."""
    return (
        isinstance(args, tuple)
        and len(args) == 5
        and isinstance(args[0], int)
        and isinstance(args[1], list)
        and all(isinstance(c, int) for c in args[1])
        and isinstance(args[2], int)
        and isinstance(args[3], dict)
        and isinstance(args[4], tuple)
    )


def _regex_stand_in_fits() -> bool:
    """`re._compiler.compile` is the function `_regex_program` follows: same program on a probe."""
    try:
        probe = r"(?P<word>\w+)\s*(?:=|:)\s*(\d{2,}|[a-f]+)$"
        flags, code, groups, groupindex, indexgroup = _regex_program(probe, re_compiler.SRE_FLAG_IGNORECASE)
        ours = re_compiler._sre.compile(probe, flags, code, groups, groupindex, indexgroup)
        return bool(ours == _compile_regex(probe, re_compiler.SRE_FLAG_IGNORECASE))
    except Exception:  # noqa: BLE001 (another Python's internals: keep its own compile)
        return False


def dump(kept: dict[Key, bytes]) -> bytes:
    """A kept file's bytes (the shipped file's too): `_load` reads them."""
    return MAGIC_NUMBER + marshal.dumps(kept)


def _load(path: Path) -> dict[Key, bytes]:
    try:
        data = path.read_bytes()
        if not data.startswith(MAGIC_NUMBER):
            return {}
        kept = marshal.loads(memoryview(data)[len(MAGIC_NUMBER) :])  # (a slice would copy the file)
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    return kept if isinstance(kept, dict) else {}


_installed: GeneratedCode | None = None


def install(path: Path, shipped: Path | None = SHIPPED) -> GeneratedCode:
    """From now on, dataclasses, named tuples and regular expressions are made from kept code
    where there is some."""
    global _installed
    if _installed is None:
        import atexit

        _installed = GeneratedCode(path, shipped)
        dataclasses.exec = _installed.exec  # type: ignore[attr-defined]
        collections.eval = _installed.eval  # type: ignore[attr-defined]
        typing.compile = _installed.compile  # type: ignore[attr-defined]
        if sys.version_info[:2] in ((3, 11), (3, 12), (3, 13)) and _regex_stand_in_fits():
            re_compiler.compile = _installed.compile_regex
        atexit.register(save)  # `mermaid exec` ends in os._exit and calls save() itself
    return _installed


def save() -> None:
    """Keep what this process compiled for the next one (once, at exit)."""
    if _installed is not None:
        _installed.save()
