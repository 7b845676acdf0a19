"""The policy gate: shell classifier, engine, auto reviewer, hooks, and the `policies/` presets.

Submodules are imported by who needs them (the reviewer and hooks pull in asyncio and JSON only,
never an SDK). This module holds the preset loader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mermaid_cli.core.errors import ConfigError


def presets_dirs() -> list[Path]:
    """Where presets live: `policies/` at the repo root (a source checkout), then the copy shipped
    inside the package (`mermaid_cli/policies`, put there by the wheel build)."""
    here = Path(__file__).resolve()
    return [here.parents[2] / "policies", here.parents[1] / "policies"]


def list_presets() -> list[str]:
    names: set[str] = set()
    for d in presets_dirs():
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.toml"))
    return sorted(names)


def find_preset(name_or_path: str) -> Path:
    candidate = Path(name_or_path).expanduser()
    looks_like_path = "/" in name_or_path or "\\" in name_or_path or name_or_path.endswith(".toml")
    if looks_like_path or candidate.is_file():
        if candidate.is_file():
            return candidate
        if looks_like_path:
            raise ConfigError(f"policy file not found: {name_or_path}", key="--policy")
    for d in presets_dirs():
        path = d / f"{name_or_path}.toml"
        if path.is_file():
            return path
    available = ", ".join(list_presets()) or "none"
    raise ConfigError(f"unknown policy preset {name_or_path!r} (available: {available})", key="--policy")


def load_preset(name_or_path: str) -> dict[str, Any]:
    """The preset as a config layer (a dict with a `safety` table). Raises ConfigError (exit 2)
    for an unknown name, a missing file or invalid TOML."""
    path = find_preset(name_or_path)
    import tomllib  # here: its regexes compile at import, and most runs read no TOML

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read policy: {exc}", source=str(path)) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}", source=str(path)) from exc
    return data


def preset_description(name_or_path: str) -> str:
    """The comment block at the top of a preset, without the `#`s (for `mermaid policies`)."""
    lines = []
    for line in find_preset(name_or_path).read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[1:].removeprefix(" "))
    return "\n".join(lines).strip()
