"""The effective settings as `mermaid config show` prints them: every leaf with the layer that
set it (`effective_items`), or as TOML commented with its source (`effective_toml`).
"""

from __future__ import annotations

from typing import Any

from mermaid_cli.config.layers import toml_key, toml_value
from mermaid_cli.config.loader import LoadedSettings


def _leaves(loaded: LoadedSettings) -> list[tuple[tuple[str, ...], Any, str]]:
    """(key parts, value, source) for every leaf of the effective settings."""
    out: list[tuple[tuple[str, ...], Any, str]] = []

    def walk(value: Any, parts: tuple[str, ...]) -> None:
        if isinstance(value, dict) and value:
            for k, v in value.items():
                walk(v, (*parts, k))
        else:
            out.append((parts, value, loaded.sources.get(".".join(parts), "defaults")))

    walk(loaded.settings.model_dump(mode="json"), ())
    return out


def effective_items(loaded: LoadedSettings) -> list[tuple[str, Any, str]]:
    """(dotted key, value, source) for every leaf of the effective settings, for `config show`."""
    return [(".".join(parts), value, source) for parts, value, source in _leaves(loaded)]


def effective_toml(loaded: LoadedSettings) -> str:
    """The effective settings as TOML, each line commented with its source. A key that is not set
    (TOML has no null) is shown as a comment, so the whole text parses with `tomllib`."""
    lines = []
    for parts, value, source in _leaves(loaded):
        key = ".".join(toml_key(part) for part in parts)
        if value is None:
            lines.append(f"# {key} is not set    # {source}")
        else:
            lines.append(f"{key} = {toml_value(value)}    # {source}")
    return "\n".join(lines) + "\n"




