"""The recording format: what `--record FILE` writes and `--model replay/FILE` serves back.

JSONL. An optional header line, then one line per model call (a provider-neutral `ModelTurn`):

    {"type": "header", "format": "mermaid-recording", "version": 1, "model": "anthropic/..."}
    {"type": "turn", "content": [{"type": "text", "text": "..."},
                                 {"type": "tool_call", "id": "c1", "name": "write_file",
                                  "arguments": {"path": "a.txt", "content": "hi"}}],
     "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}}

Hand-written scripts use the same lines (the fake provider server in `fixtures/` serves them over
the real wire protocols too). Lines whose `type` is neither are kept for other readers and skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from mermaid_cli.core.errors import UsageError
from mermaid_cli.core.types import ModelTurn

FORMAT = "mermaid-recording"
VERSION = 1


def load_turns(path: Path) -> tuple[dict[str, Any], list[ModelTurn]]:
    """Read a recording. Raises UsageError naming the file and line when it is not valid."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"replay file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read replay file {path}: {exc}") from None
    header: dict[str, Any] = {}
    turns: list[ModelTurn] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{lineno}: not a JSON line ({exc.msg})") from None
        except (ValueError, RecursionError) as exc:  # a number too long to read, nesting too deep
            raise UsageError(f"{path}:{lineno}: not a JSON line ({type(exc).__name__})") from None
        if not isinstance(obj, dict):
            raise UsageError(f"{path}:{lineno}: expected a JSON object")
        kind = obj.get("type")
        if kind == "header":
            version, model = obj.get("version", VERSION), obj.get("model")
            if not isinstance(version, int) or isinstance(version, bool):
                raise UsageError(
                    f"{path}:{lineno}: the header's version must be a whole number, not {version!r}"
                )
            if model is not None and not isinstance(model, str):
                raise UsageError(f"{path}:{lineno}: the header's model must be a string, not {model!r}")
            if version > VERSION:
                raise UsageError(
                    f"{path}:{lineno}: recording version {obj['version']} is newer than this Mermaid reads ({VERSION})"
                )
            header = obj
        elif kind == "turn":
            body = {k: v for k, v in obj.items() if k in ("content", "stop_reason", "usage", "model")}
            try:
                turns.append(ModelTurn.model_validate(body))
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                loc = ".".join(str(p) for p in first["loc"])
                raise UsageError(f"{path}:{lineno}: invalid turn at {loc}: {first['msg']}") from None
    return header, turns


def header_line(model: str, recorded_at: str) -> dict[str, Any]:
    return {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "model": model,
        "recorded_at": recorded_at,
    }


def turn_line(turn: ModelTurn) -> dict[str, Any]:
    return {"type": "turn", **turn.model_dump(mode="json", exclude_none=True)}


class Recorder:
    """Appends each model turn to FILE as it completes, flushed per line (a crash keeps the rest)."""

    def __init__(self, path: Path, model: str, recorded_at: str, redact=lambda s: s) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: TextIO = path.open("w", encoding="utf-8")
        self._redact = redact
        self._write(header_line(model, recorded_at))

    def _write(self, obj: dict[str, Any]) -> None:
        self._fh.write(self._redact(json.dumps(obj, ensure_ascii=False)) + "\n")
        self._fh.flush()

    def record(self, turn: ModelTurn) -> None:
        self._write(turn_line(turn))

    def close(self) -> None:
        self._fh.close()
