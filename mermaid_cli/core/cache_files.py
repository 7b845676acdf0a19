"""Cache files: written whole (a temp file renamed over the old one) and on a best-effort basis.
A cache is an optimisation, never a reason to fail a run, and needs no flush to disk."""

from __future__ import annotations

import os
from pathlib import Path


def write_whole(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        pass
