"""Installed plugins: the lock file (`<data dir>/plugins.lock.json`), install (a copy under
`<data dir>/plugins/<name>/`, disabled), enable, disable, and which plugins a run loads.

A plugin is loaded when the lock says it is enabled (`mermaid plugin enable`) or the user's config
lists it in `[plugins] enabled`; a project config cannot do either (the loader drops `plugins`
from it with a warning). The installed copy, not the source directory, is what runs: a later edit
to the source changes nothing until it is installed again, which turns the plugin off again.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from mermaid_cli.config.dirs import data_dir
from mermaid_cli.config.loader import Settings
from mermaid_cli.extensions.locations import lock_path
from mermaid_cli.extensions.manifest import Audit, PluginError, PluginManifest, audit


class LockEntry(BaseModel):
    version: str
    description: str = ""
    #: where it was installed from
    source: str
    #: the installed copy
    path: str
    installed_at: str
    enabled: bool = False


class LockFile(BaseModel):
    version: int = 1
    plugins: dict[str, LockEntry] = Field(default_factory=dict)


@dataclass(frozen=True)
class LoadedPlugin:
    """An enabled plugin whose installed copy passed the audit again."""

    manifest: PluginManifest
    root: Path
    audit: Audit

    @property
    def name(self) -> str:
        return self.manifest.name


def read_lock(env: Mapping[str, str] | None = None) -> LockFile:
    path = lock_path(env)
    try:
        return LockFile.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return LockFile()
    except (OSError, ValidationError, ValueError) as exc:
        raise PluginError(
            f"{path}: unreadable lock file ({str(exc).splitlines()[0]}); remove it and reinstall"
        ) from None


def write_lock(lock: LockFile, env: Mapping[str, str] | None = None) -> None:
    path = lock_path(env)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(lock.model_dump_json(indent=2) + "\n")
    os.replace(tmp, path)


def install(
    source: Path, env: Mapping[str, str] | None = None, *, now: datetime | None = None
) -> tuple[Audit, bool]:
    """Audit `source` and copy it into the data dir, disabled. (audit, was installed before)."""
    checked = audit(source)
    name = checked.manifest.name
    store = data_dir(env) / "plugins"
    store.mkdir(parents=True, exist_ok=True)
    target = store / name
    staging = Path(tempfile.mkdtemp(dir=store, prefix=f".{name}."))
    try:
        shutil.copytree(checked.root, staging / "tree", symlinks=True)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging / "tree", target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    lock = read_lock(env)
    existed = name in lock.plugins
    lock.plugins[name] = LockEntry(
        version=checked.manifest.version,
        description=checked.manifest.description,
        source=str(checked.root),
        path=str(target),
        installed_at=(now or datetime.now(UTC)).isoformat(timespec="seconds"),
        enabled=False,
    )
    write_lock(lock, env)
    return audit(target), existed


def set_enabled(name: str, enabled: bool, env: Mapping[str, str] | None = None) -> Audit:
    """Flip a plugin on or off in the lock; the audit of its installed copy (re-checked first)."""
    lock = read_lock(env)
    entry = lock.plugins.get(name)
    if entry is None:
        known = ", ".join(sorted(lock.plugins)) or "none installed"
        raise PluginError(f"no installed plugin named {name!r} (installed: {known})")
    checked = audit(Path(entry.path))
    entry.enabled = enabled
    write_lock(lock, env)
    return checked


def uninstall(name: str, env: Mapping[str, str] | None = None) -> None:
    lock = read_lock(env)
    entry = lock.plugins.pop(name, None)
    if entry is None:
        raise PluginError(f"no installed plugin named {name!r}")
    shutil.rmtree(entry.path, ignore_errors=True)
    write_lock(lock, env)


def enabled_plugins(
    settings: Settings, env: Mapping[str, str] | None = None
) -> tuple[list[LoadedPlugin], list[str]]:
    """The plugins this run loads, sorted by name, and warnings about those it cannot."""
    warnings: list[str] = []
    try:
        lock = read_lock(env)
    except PluginError as exc:
        return [], [str(exc)]
    wanted = {n for n, e in lock.plugins.items() if e.enabled} | set(settings.plugins.enabled)
    out = []
    for name in sorted(wanted):
        entry = lock.plugins.get(name)
        if entry is None:
            warnings.append(
                f"plugin {name!r} is enabled in the config but not installed (mermaid plugin install PATH)"
            )
            continue
        try:
            checked = audit(Path(entry.path), walk=False)
        except PluginError as exc:
            warnings.append(f"plugin {name} not loaded: {exc}")
            continue
        if checked.manifest.name != name:
            warnings.append(f"plugin {name} not loaded: its manifest now names {checked.manifest.name!r}")
            continue
        out.append(LoadedPlugin(checked.manifest, checked.root, checked))
    return out, warnings
