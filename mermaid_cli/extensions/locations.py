"""Where extensions live on disk: the plugin lock in the data dir, and the skill and prompt-command
directories of the project (at its git root) and of the user. A light module: a run checks these
paths before it imports any of the extension machinery."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mermaid_cli.config.dirs import data_dir, user_config_dir

LOCK_NAME = "plugins.lock.json"


def lock_path(env: Mapping[str, str] | None = None) -> Path:
    return data_dir(env) / LOCK_NAME


def project_dir(root: Path, kind: str) -> Path:
    """`.mermaid/<kind>` (skills, commands) under `root`: the project's git root, else the project."""
    return root / ".mermaid" / kind


def user_dir(env: Mapping[str, str], kind: str) -> Path:
    return user_config_dir(env) / kind
