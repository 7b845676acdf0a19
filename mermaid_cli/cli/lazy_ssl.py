"""asyncio without `ssl` until something needs TLS (issue 23).

asyncio's `base_events`, `selector_events` and `sslproto` each `import ssl` as asyncio loads: that
loads OpenSSL's libssl and builds the ssl module's enums, ~2% of the instructions of a 3-turn run
whose model speaks plain HTTP (a model server or gateway on the machine, the benchmarks' fake
model) and that never opens a TLS connection.

`import_asyncio` imports asyncio while `ssl` cannot be imported, so those modules hold `ssl = None`
(as on a Python built without it), and puts a finder first on `sys.meta_path` that, when anything
first imports `ssl`, lets it load and hands it to them, with the one global `sslproto` derives from
it (`SSLAgainErrors`). An SSL context cannot exist before `ssl` is imported, so asyncio has its
`ssl` before any TLS connection, whoever opens it (the provider clients, httpx, MCP, web tools).
Where asyncio is not the shape this was written against (Python 3.11-3.13: exactly those three
modules take `ssl = None`), `ssl` is handed over at once, as if nothing had happened; where
`ssl` or asyncio is already loaded (an https early request imports `ssl` first), nothing is done.
"""

from __future__ import annotations

import sys
from collections.abc import Set as AbstractSet
from importlib.machinery import ModuleSpec
from types import ModuleType

#: the modules that take `ssl = None` when asyncio loads without it
HOLDERS = frozenset({"asyncio.base_events", "asyncio.selector_events", "asyncio.sslproto"})
#: the Pythons whose asyncio was read for this
VERSIONS = ((3, 11), (3, 12), (3, 13))


def import_asyncio() -> None:
    """Import asyncio, without `ssl` where that is safe (see the module doc)."""
    if "asyncio" in sys.modules or "ssl" in sys.modules or sys.version_info[:2] not in VERSIONS:
        import asyncio  # noqa: F401

        return
    before = set(sys.modules)
    sys.modules["ssl"] = None  # type: ignore[assignment]  # `import ssl` raises ImportError
    try:
        import asyncio  # noqa: F401
    except ImportError:
        pass  # something imported `ssl` without expecting it to be missing: the usual way below
    finally:
        if "ssl" in sys.modules and sys.modules["ssl"] is None:
            del sys.modules["ssl"]
    holders = {name for name in set(sys.modules) - before if getattr(sys.modules[name], "ssl", False) is None}
    if holders == HOLDERS and "asyncio" in sys.modules:
        sys.meta_path.insert(0, _HandOver())
        return
    import ssl

    hand_over(ssl, holders)
    import asyncio  # noqa: F401, F811  # (again, where the first try failed)


def hand_over(ssl: ModuleType, holders: AbstractSet[str] = HOLDERS) -> None:
    """Give `ssl` to the modules that took `ssl = None`, and `sslproto` what it derives from it."""
    for name in holders:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "ssl", False) is None:
            module.ssl = ssl  # type: ignore[attr-defined]
    proto = sys.modules.get("asyncio.sslproto")
    if proto is not None and not hasattr(proto, "SSLAgainErrors"):
        proto.SSLAgainErrors = (ssl.SSLWantReadError, ssl.SSLSyscallError)  # type: ignore[attr-defined]


class _HandOver:
    """A meta path finder for `ssl` alone, first on `sys.meta_path` until `ssl` is imported: the
    spec it returns is the one the other finders give, with a loader that hands the module over
    once it has run."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if name != "ssl":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        from importlib.util import find_spec

        spec = find_spec("ssl")
        if spec is not None and spec.loader is not None:
            spec.loader = _HandingLoader(spec.loader)  # type: ignore[assignment]
        return spec

    def invalidate_caches(self) -> None:
        pass


class _HandingLoader:
    """The `ssl` module's own loader, which hands the module over after running it."""

    def __init__(self, inner: object) -> None:
        self._inner = inner

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        create = getattr(self._inner, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)  # type: ignore[attr-defined]
        hand_over(module)

    def __getattr__(self, name: str) -> object:  # get_source, get_filename, is_package, ...
        return getattr(self._inner, name)
