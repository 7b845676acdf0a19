"""Where the user's config and data live. A light module (os.path only, pathlib at call time): the
entry point checks these directories before anything that parses settings is imported
(`cli/entry.py`, which uses the `*_path` forms)."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path


def user_config_path(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    home = os.path.expanduser("~")
    if env.get("MERMAID_CONFIG_DIR"):
        return os.path.expanduser(env["MERMAID_CONFIG_DIR"])
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support", "mermaid")
    if os.name == "nt":
        return os.path.join(env.get("APPDATA", home), "mermaid")
    return os.path.join(env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "mermaid")


def data_path(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    home = os.path.expanduser("~")
    if env.get("MERMAID_DATA_DIR"):
        return os.path.expanduser(env["MERMAID_DATA_DIR"])
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support", "mermaid")
    return os.path.join(env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"), "mermaid")


def user_config_dir(env: Mapping[str, str] | None = None) -> Path:
    from pathlib import Path

    return Path(user_config_path(env))


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    from pathlib import Path

    return Path(data_path(env))
