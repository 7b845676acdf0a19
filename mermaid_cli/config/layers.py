"""Config layers (DESIGN.md §5): one layer's data as read (`Layer`, `read_toml`, a `-c key=VALUE`
override), where the project layer lives (`find_git_root`), and the deep merge that stacks layers
while recording which layer set each leaf (`merge`), and how a key or value is spelled in TOML
(`toml_key`, `toml_value`: `config show`, warnings). `load_settings` in `loader` drives them.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mermaid_cli.core.errors import ConfigError


@dataclass
class Layer:
    """One config layer's values and where they came from."""

    name: str  # "defaults", "user config", "profile NAME", "project config", "policy", "-c", "flags"
    source: str  # a file path or a description, used in error messages
    data: dict[str, Any]


def find_git_root(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


#: bytes a config file may hold: a project file is the repository's, and `/dev/zero` never ends
MAX_CONFIG_BYTES = 1 << 20


def read_toml(path: Path) -> dict[str, Any] | None:
    """The parsed file, None when absent; ConfigError naming the file when malformed, not a regular
    file (a FIFO would block the run, a device never end) or over `MAX_CONFIG_BYTES`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", source=str(path)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # before fdopen, which refuses a directory itself
        os.close(fd)
        raise ConfigError("not a regular file", source=str(path))
    with os.fdopen(fd, "rb") as f:
        try:
            raw = f.read(MAX_CONFIG_BYTES + 1)
        except OSError as exc:
            raise ConfigError(f"cannot read: {exc.strerror}", source=str(path)) from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"larger than {MAX_CONFIG_BYTES // 1024} KiB", source=str(path))
    import tomllib  # here: its regexes compile at import, and most runs read no TOML

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError("not UTF-8 text", source=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"malformed TOML: {exc}", source=str(path)) from None
    except RecursionError:
        raise ConfigError("malformed TOML: nested too deeply", source=str(path)) from None


def parse_override(text: str) -> tuple[list[str], Any]:
    """`key.path=VALUE` with VALUE parsed as TOML (`true`, `3`, `"x"`, `[1,2]`); a bare word is a string."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"expected key.path=VALUE, got {text!r}", source="-c")
    parts = [p.strip().strip('"') for p in key.split(".")]
    if any(not p for p in parts):
        raise ConfigError(f"bad key {key!r}", source="-c")
    import tomllib  # here: its regexes compile at import, and most runs read no TOML

    try:
        parsed = tomllib.loads(f"v = {value.strip()}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        parsed = value.strip()
    return parts, parsed


def nest(parts: list[str], value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    cur = out
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value
    return out


def merge(
    base: dict[str, Any], over: dict[str, Any], sources: dict[str, str], source: str, prefix: str = ""
) -> None:
    """Deep merge: tables merge, scalars and arrays replace. Records each leaf's source."""
    for key, value in over.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value, sources, source, path + ".")
        else:
            base[key] = copy_tree(value)
            for sub in [k for k in sources if k == path or k.startswith(path + ".")]:
                del sources[sub]
            _record(value, path, sources, source)


def copy_tree(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_tree(v) for v in value]
    return value


def _record(value: Any, path: str, sources: dict[str, str], source: str) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _record(v, f"{path}.{k}", sources, source)
    else:
        sources[path] = source


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_key(key: str) -> str:
    """`key` as a TOML key: bare when it can be, else quoted."""
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def toml_value(value: Any) -> str:
    """`value` as TOML writes it (a config file's spelling, for `config show` and warnings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, str):
        return json.dumps(value)  # JSON string escapes are valid TOML basic-string escapes
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value if item is not None) + "]"
    if isinstance(value, dict):
        pairs = (f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items() if v is not None)
        return "{" + ", ".join(pairs) + "}"
    return json.dumps(str(value))
