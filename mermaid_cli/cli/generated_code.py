"""The code `dataclasses` and `collections.namedtuple` generate, and the string annotations
`typing` compiles (every `from __future__ import annotations` field pydantic reads), compiled once
per install.

Every dataclass builds its `__init__`, `__repr__`, `__eq__` (and, frozen, `__setattr__`,
`__delattr__`, `__hash__`) by compiling Python source it writes at class creation; a run creates
~90 dataclasses before its first model request, and that compiling was ~10% of the instructions
up to it (~1 ms a class on a slow machine). The source is the same every run, so its code
objects are kept, keyed by the source itself, in a file beside the package's bytecode (the
trust of a `.pyc`), and a later process executes the kept code instead of compiling again.

What runs is exactly what the source compiles to: a source not kept is compiled as before, and a
file that is missing, unreadable or from another Python is ignored. Only the entry point installs
this (`cli.main`); the shims take the place of the `exec`/`eval`/`compile` names those modules look
up, so a future Python that no longer compiles this way simply never calls them.
"""

from __future__ import annotations

import builtins
import collections
import dataclasses
import marshal
import sys
import typing
from importlib._bootstrap_external import MAGIC_NUMBER
from pathlib import Path
from types import CodeType
from typing import Any

from mermaid_cli.core.cache_files import write_whole

FILE = (
    Path(__file__).resolve().parents[1]
    / "__pycache__"
    / f"generated-code.{sys.implementation.cache_tag}.marshal"
)
#: past this many kept sources the file starts again from what this process used
MAX_KEPT = 3000


class GeneratedCode:
    """Code objects by their source, loaded from and saved to one file. Each is kept marshalled
    and read only when its source comes up: the file holds what every command ever compiled, a
    run uses a few hundred of them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._kept: dict[tuple[str, str], bytes] | None = None  # read at the first class made
        self.used: dict[tuple[str, str], Any] = {}  # this process's code objects
        self.added = 0

    @property
    def kept(self) -> dict[tuple[str, str], bytes]:
        if self._kept is None:
            self._kept = _load(self.path)
        return self._kept

    def code(self, source: str, mode: str) -> Any:
        key = (mode, source)
        code = self.used.get(key)
        if code is not None:
            return code
        kept = self.kept.get(key)
        try:
            code = marshal.loads(kept) if kept is not None else None
        except (ValueError, EOFError, TypeError):
            code = None
        if not isinstance(code, CodeType):  # never kept, or not code any more: compile it
            code = compile(source, "<string>", mode)
            self.kept[key] = marshal.dumps(code)
            self.added += 1
        self.used[key] = code
        return code

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

    def save(self) -> None:
        if not self.added:
            return
        kept = self.kept if len(self.kept) <= MAX_KEPT else {k: self.kept[k] for k in self.used}
        write_whole(self.path, MAGIC_NUMBER + marshal.dumps(kept))
        self.added = 0


def _load(path: Path) -> dict[tuple[str, str], bytes]:
    try:
        data = path.read_bytes()
        if not data.startswith(MAGIC_NUMBER):
            return {}
        kept = marshal.loads(data[len(MAGIC_NUMBER) :])
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    return kept if isinstance(kept, dict) else {}


_installed: GeneratedCode | None = None


def install(path: Path = FILE) -> GeneratedCode:
    """From now on, dataclasses and named tuples are made from kept code where there is some."""
    global _installed
    if _installed is None:
        import atexit

        _installed = GeneratedCode(path)
        dataclasses.exec = _installed.exec  # type: ignore[attr-defined]
        collections.eval = _installed.eval  # type: ignore[attr-defined]
        typing.compile = _installed.compile  # type: ignore[attr-defined]
        atexit.register(save)  # `mermaid exec` ends in os._exit and calls save() itself
    return _installed


def save() -> None:
    """Keep what this process compiled for the next one (once, at exit)."""
    if _installed is not None:
        _installed.save()
