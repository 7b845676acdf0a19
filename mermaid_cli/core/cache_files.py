"""Cache files: written whole (a temp file renamed over the old one) and on a best-effort basis.
A cache is an optimisation, never a reason to fail a run, and needs no flush to disk."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def write_whole(path: Path, data: bytes) -> None:
    write_pieces(path, (data,))


def write_pieces(path: Path, pieces: Iterable[bytes | memoryview]) -> None:
    """Write `pieces` one after another, so a large file is never held in memory whole. Nothing
    replaces `path` unless every piece was written; an exception from `pieces` other than an
    OSError leaves the old file and reaches the caller."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as file:
            for piece in pieces:
                file.write(piece)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        if not isinstance(exc, OSError):
            raise
