"""A plain JSON-file keyring backend, for tests only. In-process: `keyring.set_keyring(FileKeyring(path))`;
in a subprocess: `PYTHON_KEYRING_BACKEND=tests.mcp_keyring.FileKeyring` and
`MERMAID_TEST_KEYRING_FILE=path`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import keyring.backend
import keyring.errors
from jaraco.classes import properties


class FileKeyring(keyring.backend.KeyringBackend):
    @properties.classproperty
    def priority(cls) -> float:  # type: ignore[override]
        # keyring instantiates every backend class it knows when it picks a default: never be
        # picked unless a test asked for this backend
        if "MERMAID_TEST_KEYRING_FILE" not in os.environ:
            raise RuntimeError("test-only backend")
        return 1

    def __init__(self, path: Path | None = None) -> None:
        super().__init__()
        self.path = Path(path or os.environ.get("MERMAID_TEST_KEYRING_FILE") or os.devnull)

    def _load(self) -> dict[str, str]:
        return json.loads(self.path.read_text()) if self.path.exists() else {}

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(f"{service}\0{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data[f"{service}\0{username}"] = password
        self.path.write_text(json.dumps(data))

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        if data.pop(f"{service}\0{username}", None) is None:
            raise keyring.errors.PasswordDeleteError(username)
        self.path.write_text(json.dumps(data))
