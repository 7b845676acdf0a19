"""Where the user's config and data live. A light module (stdlib only): the entry point checks these
directories before anything that parses settings is imported (`cli/entry.py`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path


def user_config_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("MERMAID_CONFIG_DIR"):
        return Path(env["MERMAID_CONFIG_DIR"]).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "mermaid"
    if os.name == "nt":
        return Path(env.get("APPDATA", Path.home())) / "mermaid"
    return Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "mermaid"


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("MERMAID_DATA_DIR"):
        return Path(env["MERMAID_DATA_DIR"]).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "mermaid"
    return Path(env.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "mermaid"
