"""A disk cache of the built-in tools' specs, so a run can send its first request before the tool
modules are imported. A tool's group (its catalog module) loads when the model first calls one of
its tools, while the model is still answering; groups nobody calls are never imported.

The key covers everything that decides which tools are offered and what their schemas say: the
Mermaid and pydantic versions, the size and mtime of every module that defines a tool or its
settings, and the settings and environment that switch tools on or off. A miss (or any error) just builds the
registry the normal way and writes the cache for next time.

The first run after an install has no cache yet. For the default tool sets, the package ships the
entries (`SHIPPED`, written by `python -m mermaid_cli.cli.shipped`), keyed the same way but
by the sources' content instead of their mtimes: a run that misses its cache and whose sources
are byte for byte the ones the entries were built from takes them instead of importing every tool
and building its schema (~30 ms; issue 23). `tests/test_spec_cache.py` fails when they are stale.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mermaid_cli.config.loader import Settings
from mermaid_cli.core.cache_files import write_whole
from mermaid_cli.core.types import ToolSpec
from mermaid_cli.tools.base import Tool, ToolRegistry, schema_of

#: what a group loader returns: its tools, and the tools it deliberately leaves out (with the reason)
GroupTools = tuple[list[Tool], dict[str, str]]
#: the built-in tools by group (catalog), in the order the registry offers them; each loader
#: imports its catalog only when called
ToolGroups = Mapping[str, Callable[[], GroupTools]]

PACKAGE = Path(__file__).resolve().parents[1]
SOURCE_DIRS = ("tools", "integrations/web", "config/sections")
SEARCH_KEYS = ("BRAVE_API_KEY", "TAVILY_API_KEY")
#: beside the bytecode, shared by every data dir: a run with a fresh $HOME (CI) still finds it
SHARED_DIR = PACKAGE / "tools" / "__pycache__" / "tool-specs"
#: in the package: the entries for the default tool sets, by content key (see above)
SHIPPED = PACKAGE / "tools" / "tool_specs.json"


def _sources(by_content: bool) -> list[tuple[str, int, int] | tuple[str, str]]:
    """Every module the key covers, by its size and mtime, or by its content's digest."""
    files: list[tuple[str, int, int] | tuple[str, str]] = []
    for name in SOURCE_DIRS:
        directory = os.path.join(PACKAGE, name)
        with os.scandir(directory) as entries:  # not Path.glob: ~1 ms of a run's set-up (issue 23)
            found = sorted(entry.name for entry in entries if entry.name.endswith(".py"))
        for file in found:
            path = os.path.join(directory, file)
            if by_content:
                with open(path, "rb") as source:
                    files.append((f"{name}/{file}", hashlib.sha256(source.read()).hexdigest()))
            else:
                st = os.stat(path)
                files.append((f"{name}/{file}", st.st_mtime_ns, st.st_size))
    return files


def cache_key(
    settings: Settings,
    env: Mapping[str, str],
    *,
    interactive: bool,
    vision: bool = False,
    by_content: bool = False,
) -> str:
    """The entry's key; `by_content`: the shipped entries' (sources by digest, not by mtime)."""
    from pydantic.version import VERSION as PYDANTIC_VERSION

    from mermaid_cli import __version__

    inputs = {
        "version": __version__,
        "pydantic": PYDANTIC_VERSION,  # it writes the schemas
        "files": _sources(by_content),
        "network": settings.safety.network,
        "memory": settings.memory.enabled,
        "interactive": interactive,
        "vision": vision,
        "web": settings.web.model_dump(mode="json"),
        "tools": settings.tools.model_dump(mode="json"),
        "search_keys": [k for k in SEARCH_KEYS if env.get(k, "").strip()],
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:32]


class Entry:
    """A cache entry: the offered specs in order, the absent tools, each tool's group, and the
    input schemas of `KEPT_SCHEMAS`."""

    def __init__(
        self,
        specs: list[ToolSpec],
        absent: dict[str, str],
        group_of: dict[str, str],
        schemas: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.specs, self.absent, self.group_of = specs, absent, group_of
        self.schemas = schemas or {}


def _agent_schema() -> dict[str, Any]:
    from mermaid_cli.tools.agent import AgentArgs

    return schema_of(AgentArgs)


#: tools every run makes itself (its description is the run's) whose input schema is fixed by the
#: sources the key covers: kept with the specs, since pydantic takes ~3.5 ms to build `agent`'s
KEPT_SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {"agent": _agent_schema}


def load(cache_dir: Path, key: str) -> Entry | None:
    try:
        return _entry(json.loads((cache_dir / f"{key}.json").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def load_shipped(
    settings: Settings, env: Mapping[str, str], *, interactive: bool, vision: bool = False
) -> tuple[Entry, bytes] | None:
    """The shipped entry for this tool set when the sources are the ones it was built from, and
    its encoding for the cache."""
    try:
        content_key = cache_key(settings, env, interactive=interactive, vision=vision, by_content=True)
        data = json.loads(SHIPPED.read_text(encoding="utf-8"))[content_key]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    entry = _entry(data)
    return (entry, json.dumps(data).encode("utf-8")) if entry is not None else None


def _entry(data: Any) -> Entry | None:
    try:
        specs = [ToolSpec.model_validate(s) for s in data["specs"]]
        group_of = {str(k): str(v) for k, v in dict(data["groups"]).items()}
        if any(s.name not in group_of for s in specs):
            return None  # every cached tool must say which group loads it
        schemas = {str(k): dict(v) for k, v in dict(data.get("schemas", {})).items()}
        return Entry(specs, dict(data["absent"]), group_of, schemas)
    except (ValueError, KeyError, TypeError):
        return None


def save(
    cache_dir: Path, key: str, registry: ToolRegistry, group_of: Mapping[str, str], *more_dirs: Path
) -> None:
    """Write the entry for `registry` under `key` in `cache_dir` (and each of `more_dirs`: the
    entry is built once)."""
    put(json.dumps(entry_data(registry, group_of)).encode("utf-8"), key, cache_dir, *more_dirs)


def entry_data(registry: ToolRegistry, group_of: Mapping[str, str]) -> dict[str, Any]:
    """What an entry holds, as JSON data."""
    specs = registry.specs()
    return {
        "specs": [s.model_dump(mode="json") for s in specs],
        "absent": registry.absent,
        "groups": {s.name: group_of[s.name] for s in specs if s.name in group_of},
        "schemas": {name: build_schema() for name, build_schema in KEPT_SCHEMAS.items()},
    }


def put(encoded: bytes, key: str, *dirs: Path) -> None:
    """Write an encoded entry under `key` in each of `dirs`."""
    for directory in dirs:
        write_whole(directory / f"{key}.json", encoded)


def build(groups: ToolGroups, tool_filter: object) -> tuple[ToolRegistry, dict[str, str]]:
    """Every group's tools in one registry, `tool_filter` applied, and each tool's group."""
    registry, group_of = ToolRegistry(), {}
    for group, load_group in groups.items():
        tools, absent = load_group()
        for tool in tools:
            registry.register(tool)
            group_of[tool.name] = group
        registry.absent.update(absent)
    registry.apply_filter(tool_filter)
    return registry, group_of


class CachedRegistry(ToolRegistry):
    """Offers the cached specs; a built-in tool's group loads when that tool is first needed."""

    def __init__(self, entry: Entry, groups: ToolGroups, tool_filter: object = None) -> None:
        super().__init__([], entry.absent)
        self.filter = tool_filter  # MCP tools that join before the real tools load pass it too
        self._cached = entry.specs
        self._cached_by_name = {s.name: s for s in entry.specs}
        self._kept_schemas = entry.schemas
        self._group_of = entry.group_of
        self._groups = groups
        self._loaded_groups: set[str] = set()

    def _load_group(self, group: str) -> None:
        if group in self._loaded_groups:
            return
        self._loaded_groups.add(group)
        tools, _ = self._groups[group]()  # its absent tools are in the cached entry already
        for tool in tools:
            if tool.name not in self._cached_by_name:
                continue  # the cached specs are what was offered after the [tools] filter
            admitted = self._admit(tool)
            if admitted is not None:
                self._tools[tool.name] = admitted
        # keep the registry's order (the cached one) whatever order the groups load in
        self._tools = {s.name: self._tools[s.name] for s in self._cached if s.name in self._tools}

    def _load(self) -> None:
        for group in self._groups:
            self._load_group(group)

    @property
    def loaded(self) -> bool:
        return self._loaded_groups.issuperset(self._groups)

    def get(self, name: str) -> Tool | None:
        group = self._group_of.get(name)  # a cached built-in's group (load checks every one has one)
        if group is not None:
            self._load_group(group)
        return super().get(name)  # not a built-in: the dynamic sources need no built-in loaded

    def current(self) -> list[Tool]:
        self._load()
        return super().current()

    def specs(self) -> list[ToolSpec]:
        from mermaid_cli.tools.call_options import advertise

        # The built-ins' specs are the cached ones (the key covers their sources and settings),
        # loaded or not: never rebuilt from their schemas at the first tool call.
        dynamic = [t.spec() for t in self._dynamic_tools() if t.name not in self._cached_by_name]
        extra = self.advertised.forms(dynamic, None, advertise)
        return [*self._cached, *extra]

    def names(self) -> list[str]:
        return [s.name for s in self.specs()]

    def kept_schema(self, name: str) -> dict[str, Any] | None:
        schema = self._kept_schemas.get(name)
        return copy.deepcopy(schema) if schema is not None else None  # each caller its own

    def __contains__(self, name: str) -> bool:
        return name in self._cached_by_name  # the built-ins offered, loaded or not

    def __len__(self) -> int:
        return len(self._cached)
