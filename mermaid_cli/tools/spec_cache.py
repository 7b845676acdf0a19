"""A disk cache of the built-in tools' specs, so a run can send its first request before the tool
modules are imported (they load at the first tool call, while the model is still answering).

The key covers everything that decides which tools are offered and what their schemas say: the
Mermaid version, the size and mtime of every module that defines a tool or its settings, and the
settings and environment that switch tools on or off. A miss (or any error) just builds the
registry the normal way and writes the cache for next time.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from mermaid_cli.config.loader import Settings
from mermaid_cli.core.types import ToolSpec
from mermaid_cli.tools.base import Tool, ToolRegistry

PACKAGE = Path(__file__).resolve().parents[1]
SOURCE_DIRS = ("tools", "integrations/web", "config/sections")
SEARCH_KEYS = ("BRAVE_API_KEY", "TAVILY_API_KEY")
#: beside the bytecode, shared by every data dir: a run with a fresh $HOME (CI) still finds it
SHARED_DIR = PACKAGE / "tools" / "__pycache__" / "tool-specs"


def cache_key(settings: Settings, env: Mapping[str, str], *, interactive: bool, vision: bool = False) -> str:
    from mermaid_cli import __version__

    files = []
    for name in SOURCE_DIRS:
        for path in sorted((PACKAGE / name).glob("*.py")):
            st = path.stat()
            files.append((f"{name}/{path.name}", st.st_mtime_ns, st.st_size))
    inputs = {
        "version": __version__,
        "files": files,
        "network": settings.safety.network,
        "memory": settings.memory.enabled,
        "interactive": interactive,
        "vision": vision,
        "web": settings.web.model_dump(mode="json"),
        "tools": settings.tools.model_dump(mode="json"),
        "search_keys": [k for k in SEARCH_KEYS if env.get(k, "").strip()],
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:32]


def load(cache_dir: Path, key: str) -> tuple[list[ToolSpec], dict[str, str]] | None:
    try:
        data = json.loads((cache_dir / f"{key}.json").read_text(encoding="utf-8"))
        return [ToolSpec.model_validate(s) for s in data["specs"]], dict(data["absent"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save(cache_dir: Path, key: str, registry: ToolRegistry) -> None:
    data = {"specs": [s.model_dump(mode="json") for s in registry.specs()], "absent": registry.absent}
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = cache_dir / f".{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, cache_dir / f"{key}.json")
    except OSError:
        pass  # a cache is an optimisation, never a reason to fail a run


def adopt(source: Path, cache_dir: Path, key: str) -> None:
    """Copy a cache entry found in the shared dir into this data dir's cache."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = cache_dir / f".{key}.{os.getpid()}.tmp"
        tmp.write_bytes((source / f"{key}.json").read_bytes())
        os.replace(tmp, cache_dir / f"{key}.json")
    except OSError:
        pass


class CachedRegistry(ToolRegistry):
    """Offers the cached specs until a tool is needed, then loads the real tools."""

    def __init__(
        self,
        specs: list[ToolSpec],
        absent: dict[str, str],
        loader: Callable[[], ToolRegistry],
        tool_filter: object = None,
    ) -> None:
        super().__init__([], absent)
        self.filter = tool_filter  # MCP tools that join before the real tools load pass it too
        self._cached = specs
        self._cached_by_name = {s.name: s for s in specs}
        self._loader: Callable[[], ToolRegistry] | None = loader

    def _load(self) -> None:
        if self._loader is not None:
            real, self._loader = self._loader(), None
            self._tools, self.absent, self.filter = real._tools, real.absent, real.filter

    @property
    def loaded(self) -> bool:
        return self._loader is None

    def get(self, name: str) -> Tool | None:
        self._load()
        return super().get(name)

    def current(self) -> list[Tool]:
        self._load()
        return super().current()

    def specs(self) -> list[ToolSpec]:
        from mermaid_cli.tools.call_options import advertise

        if self.loaded:
            # The loaded built-ins' specs are the cached ones (the key covers their sources and
            # settings): reused, not rebuilt from their schemas at the first tool call.
            built_in = [self._cached_by_name.get(t.name) or advertise(t.spec()) for t in self._tools.values()]
            return [*built_in, *(advertise(t.spec()) for t in self._dynamic_tools())]

        extra = [advertise(t.spec()) for t in self._dynamic_tools() if t.name not in self._cached_by_name]
        return [*self._cached, *extra]

    def names(self) -> list[str]:
        return [s.name for s in self.specs()]

    def __contains__(self, name: str) -> bool:
        self._load()
        return super().__contains__(name)

    def __len__(self) -> int:
        self._load()
        return super().__len__()
