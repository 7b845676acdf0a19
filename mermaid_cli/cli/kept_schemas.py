"""The core schemas pydantic generates for Mermaid's own models, kept per install (issue 23).

Completing a pydantic model class means generating its core schema in Python (every field's
annotation walked, every nested model's schema inlined) before pydantic-core builds the validator
and serializer from it: ~20 ms of the ~60 models a 3-turn run completes, about 6% of the run. The
schema is the same in every process that runs the same sources with the same pydantic, so it is
kept, pickled, in a file beside the package's bytecode (the trust of a `.pyc`: whoever can write
there can already replace Mermaid's code), and a later process hands the kept schema to
pydantic-core instead of generating it again.

What runs is what pydantic would run:

- the file holds one key: the Python, pydantic, pydantic-core, typing_extensions,
  annotated-types and typing-inspection it was written under, and the size and modification time
  of every source file of the package. A process under any other key uses none of it and, at
  exit, replaces it with the schemas it generated (nothing is written when Python is told not to
  write bytecode, as for `cli/kept_modules.py`);
- a Mermaid model's schema follows from the sources alone: no field's default, bound or choices
  are made from the environment, the home or working directory at import (tests/test_kept_schemas.py
  keeps every model's schema under one home, working directory and data dirs and checks it
  under others);
- only models of a Mermaid module are kept (not one made in a function, nor a parametrized
  generic, nor one with computed fields), and an entry is used only for a class with the fields
  it was kept with;
- a kept schema names the classes and functions in it (as pickle does) and marks the model itself,
  the functions defined in it (its validators) and functions made inside another (pydantic's
  validator and serializer of a `Path` field: by the outer function's nested code and the values
  they close over, when each is a class or an immutable scalar). Reading one looks names up only
  in modules already imported (it never imports), and any failure is a miss. A schema holding
  something else pickle cannot name is not kept: that model's schema is generated every time;
- the stand-in takes the place of `GenerateSchema` only in pydantic's `_model_construction`, and
  only for the first schema each instance is asked for (the model it completes): a pydantic that
  completes models some other way simply never asks it.

Only `mermaid exec` installs it (`cli/exec_run.py`), in a real process.
"""

from __future__ import annotations

import _pickle  # (the C pickler: `pickle` itself costs an import)
import io
import marshal
import os
import sys
from pathlib import Path
from types import CellType, CodeType, FunctionType
from typing import Any

from pydantic import BaseModel
from pydantic._internal import _model_construction
from pydantic._internal._generate_schema import GenerateSchema

from mermaid_cli.core.cache_files import write_whole
from mermaid_cli.core.sources import Stat, package_stats

PACKAGE = Path(__file__).resolve().parents[1]
FILE = PACKAGE / "__pycache__" / f"model-schemas.{sys.implementation.cache_tag}.marshal"
#: the file's layout; another one is not read
FORMAT = 1
#: what a kept function made inside another may close over, besides classes
_SCALARS = (type(None), bool, int, float, str, bytes)

#: the versions and schema modules, then (relative path, mtime_ns, size) of every source file
Key = list[Stat]
#: a model's entry: its field names in order, and its pickled schema
Entry = tuple[tuple[str, ...], bytes]


def current_key(root: Path = PACKAGE) -> Key:
    """This process's key: Python, the libraries that generate schemas (by version and file), and
    the package's sources."""
    import annotated_types
    import typing_extensions
    import typing_inspection.introspection
    from pydantic._internal import _generate_schema
    from pydantic.version import VERSION
    from pydantic_core import __version__ as core_version
    from pydantic_core import _pydantic_core

    key: Key = [(f"python {sys.version}", 0, 0), (f"pydantic {VERSION} {core_version}", 0, 0)]
    for module in (
        _generate_schema,
        _pydantic_core,
        typing_extensions,
        annotated_types,
        typing_inspection.introspection,
    ):
        file = str(module.__file__)
        st = os.stat(file)
        key.append((file, st.st_mtime_ns, st.st_size))
    return key + package_stats(str(root))  # (the walk the early request's key made, if any)


def _the_model() -> type[BaseModel]:
    """In a kept schema, the model it belongs to (`_Unpickler.find_class` puts the model being
    completed in its place)."""
    raise _pickle.UnpicklingError("a kept schema read without its model")


def _class_function(model: type, name: str) -> FunctionType:
    """A function defined in `model` (a validator), by its name there."""
    function = getattr(model, name, None)
    if not isinstance(function, FunctionType):
        raise _pickle.UnpicklingError(f"{model.__qualname__}.{name} is not a function")
    return function


class _Pickler(_pickle.Pickler):
    """Pickles a schema of `model`; `reducer_override` is asked only about what is not a plain
    container or scalar (classes, functions, other objects), not about every object as
    `persistent_id` would be (a third of the time)."""

    def __init__(self, file: io.BytesIO, model: type) -> None:
        super().__init__(file, protocol=4)
        self._model = model

    def reducer_override(self, obj: object) -> Any:
        if obj is self._model:
            return (_the_model, ())
        if isinstance(obj, FunctionType):
            name = obj.__name__
            if (  # a validator defined in the class: by its name there
                obj.__qualname__ == f"{self._model.__qualname__}.{name}"
                and getattr(self._model, name, None) is obj
            ):
                return (_class_function, (self._model, name))
            if ".<locals>." in obj.__qualname__:
                made = _closure_args(obj)
                if made is not None:
                    return (_closure, made)
        return NotImplemented


def _closure_args(function: FunctionType) -> tuple[Any, ...] | None:
    """A function made inside another (pydantic's validator and serializer of a `Path` field): where
    its code is and the values it closes over, when each is a class or an immutable scalar (a
    function rebuilt from them is the function the outer one makes); else None (not kept)."""
    if function.__dict__ or function.__defaults__ or function.__kwdefaults__:
        return None
    try:
        values = tuple(cell.cell_contents for cell in function.__closure__ or ())
    except ValueError:  # (a cell not yet bound)
        return None
    if not all(isinstance(value, type) or type(value) in _SCALARS for value in values):
        return None
    outer = function.__qualname__.partition(".<locals>.")[0]
    code = function.__code__
    return (function.__module__, outer, code.co_qualname, code.co_firstlineno, values)


def _closure(module: str, outer: str, qualname: str, line: int, values: tuple[Any, ...]) -> FunctionType:
    """The function `_closure_args` describes, made again from the outer function's nested code."""
    found: Any = sys.modules.get(module)
    if found is None:
        raise _pickle.UnpicklingError(f"{module} is not imported")
    for part in outer.split("."):
        found = getattr(found, part)
    found = getattr(found, "__func__", found)
    code = _nested_code(found.__code__, qualname, line)
    if code is None or len(code.co_freevars) != len(values):
        raise _pickle.UnpicklingError(f"no code for {qualname} in {module}")
    return FunctionType(
        code, found.__globals__, code.co_name, None, tuple(CellType(value) for value in values)
    )


def _nested_code(code: CodeType, qualname: str, line: int) -> CodeType | None:
    for const in code.co_consts:
        if isinstance(const, CodeType):
            if const.co_qualname == qualname and const.co_firstlineno == line:
                return const
            found = _nested_code(const, qualname, line)
            if found is not None:
                return found
    return None


class _Unpickler(_pickle.Unpickler):
    def __init__(self, data: bytes, model: type) -> None:
        super().__init__(io.BytesIO(data))
        self._model = model

    def find_class(self, module: str, name: str) -> Any:
        if module == __name__ and name == _the_model.__name__:
            return lambda: self._model
        found: Any = sys.modules.get(module)
        if found is None:  # everything a schema names is imported before its model is made
            raise _pickle.UnpicklingError(f"{module} is not imported")
        for part in name.split("."):
            found = getattr(found, part)
        return found


def keepable_name(model: object) -> str | None:
    """`module:qualname` of a model whose schema may be kept, else None."""
    if not isinstance(model, type) or not issubclass(model, BaseModel):
        return None
    module = model.__dict__.get("__module__")
    qualname = model.__qualname__
    if not isinstance(module, str) or not module.startswith("mermaid_cli."):
        return None
    if "<locals>" in qualname or "[" in qualname:
        return None
    if model.__pydantic_generic_metadata__.get("origin") is not None:
        return None
    if model.__pydantic_decorators__.computed_fields:  # (their infos are made while generating)
        return None
    return f"{module}:{qualname}"


class KeptSchemas:
    """The kept schemas of one key: read at the first model completed, written at exit."""

    def __init__(self, path: Path, root: Path = PACKAGE) -> None:
        self.path = path
        self.root = root
        self._key: Key | None = None
        self._kept: dict[str, Entry] | None = None
        #: the schemas generated here, by name, with their models: pickled at exit
        self.made: dict[str, tuple[type[BaseModel], Any]] = {}
        self.hits = 0
        #: nothing is kept when Python is told not to write bytecode, or cannot write here (a
        #: system install run by a user)
        self.keeping = not sys.dont_write_bytecode and _writable(path.parent)

    def _entries(self) -> dict[str, Entry]:
        if self._kept is None:
            self._kept = {}
            try:
                layout, key, entries = marshal.loads(self.path.read_bytes())
            except (OSError, ValueError, EOFError, TypeError):
                return self._kept  # (no file: the key waits for `save`, off a first run's way)
            if layout == FORMAT and isinstance(entries, dict) and key == self.key():
                self._kept = entries
        return self._kept

    def key(self) -> Key:
        if self._key is None:
            self._key = current_key(self.root)
        return self._key

    def schema_of(self, model: type[BaseModel], name: str) -> Any:
        """The kept schema of `model`, or None."""
        entry = self._entries().get(name)
        if entry is None:
            return None
        try:
            fields, data = entry
            if fields != tuple(model.__pydantic_fields__):
                return None
            schema = _Unpickler(data, model).load()
        except Exception:  # noqa: BLE001 (an entry that does not read back is a miss)
            return None
        if not isinstance(schema, dict):
            return None
        self.hits += 1
        return schema

    def keep(self, model: type[BaseModel], name: str, schema: Any) -> None:
        """Keep `schema` at exit (pickled then: nothing of it is on the way to a first request)."""
        if self.keeping:
            self.made[name] = (model, schema)

    def save(self) -> None:
        made = {}
        for name, (model, schema) in self.made.items():
            buffer = io.BytesIO()
            try:
                _Pickler(buffer, model).dump(schema)
            except Exception:  # noqa: BLE001 (something pickle cannot name: generated every time)
                continue
            made[name] = (tuple(model.__pydantic_fields__), buffer.getvalue())
        self.made = {}
        if not made:
            return
        entries = {**self._entries(), **made}
        write_whole(self.path, marshal.dumps((FORMAT, self.key(), entries)))
        self._kept = entries


def _writable(directory: Path) -> bool:
    """`directory`, or the nearest of its parents that exists, is writable by this process."""
    for candidate in (directory, *directory.parents):
        if os.path.isdir(candidate):
            return os.access(candidate, os.W_OK)
    return False


class _KeptSchemaGenerator:
    """Stands in for pydantic's `GenerateSchema` where `complete_model_class` makes one: the first
    schema asked for (the model being completed) is the kept one when there is one, and the one
    generated is kept for the next process. Everything else is the real generator's (a wrapper,
    not a subclass: pydantic warns on those, and its own recursion never comes through here)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._generator = GenerateSchema(*args, **kwargs)
        self._asked = False
        self._kept_schema: Any = None
        self._keep_as: tuple[type[BaseModel], str] | None = None

    def generate_schema(self, obj: Any) -> Any:
        if self._asked or _installed is None:
            return self._generator.generate_schema(obj)
        self._asked = True
        name = keepable_name(obj)
        if name is None:
            return self._generator.generate_schema(obj)
        kept = _installed.schema_of(obj, name)
        if kept is not None:
            self._kept_schema = kept
            return kept
        self._keep_as = (obj, name)
        return self._generator.generate_schema(obj)

    def clean_schema(self, schema: Any) -> Any:
        if self._kept_schema is not None and schema is self._kept_schema:
            return schema  # (kept after cleaning)
        cleaned = self._generator.clean_schema(schema)
        if self._keep_as is not None and _installed is not None:
            _installed.keep(*self._keep_as, cleaned)
        return cleaned

    def __getattr__(self, name: str) -> Any:
        return getattr(self._generator, name)


_installed: KeptSchemas | None = None


def install(path: Path | None = None, root: Path = PACKAGE) -> KeptSchemas:
    """From now on, models completed in this process take their kept schemas (from `path`, by
    default `FILE`)."""
    global _installed
    if _installed is None:
        _installed = KeptSchemas(path or FILE, root)
        if getattr(_model_construction, "GenerateSchema", None) is GenerateSchema:
            _model_construction.GenerateSchema = _KeptSchemaGenerator  # type: ignore[misc,assignment]
    return _installed


def save() -> None:
    """Keep the schemas this process generated for the next one (at exit)."""
    if _installed is not None:
        _installed.save()
