"""The task list: one JSON object per line (`id`, `prompt`, optional per-task flags).

A bad line is a usage error naming its line number (exit 2) before any task runs; the whole list
is read and checked first, so a batch never stops half-way on a typo in line 180.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mermaid_cli.core.errors import UsageError

TASK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class BatchTask(BaseModel):
    """One line of TASKS.jsonl. Per-task flags mirror `mermaid exec`'s; anything else is refused,
    so a misspelt flag is an error, not a silently ignored key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=TASK_ID_PATTERN)
    prompt: str = Field(min_length=1)
    model: str | None = None
    safety: Literal["read_only", "ask", "auto", "full_access"] | None = None
    verify: tuple[str, ...] = ()
    #: run in this directory of the task's workspace (relative, inside it)
    path: str | None = None
    max_turns: int | None = Field(default=None, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_cost: float | None = Field(default=None, gt=0)
    timeout: float | None = Field(default=None, gt=0)

    @field_validator("verify", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

    @field_validator("path")
    @classmethod
    def _relative_inside(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = Path(value).parts
        if Path(value).is_absolute() or ".." in parts:
            raise ValueError("must be a relative path inside the workspace (no '..', not absolute)")
        return value


class TaskList(BaseModel):
    """The checked list and a digest of its bytes: every shard's results name the digest, so a merge
    can tell results of another task list (or an edited one) from its own."""

    model_config = ConfigDict(frozen=True)

    tasks: tuple[BatchTask, ...]
    digest: str

    @property
    def ids(self) -> list[str]:
        return [task.id for task in self.tasks]


def load_tasks(path: Path) -> TaskList:
    """Read and check TASKS.jsonl; UsageError (exit 2) on the first bad line, naming it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read task list {path}: {exc.strerror or exc}") from None
    tasks: list[BatchTask] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        try:
            task = BatchTask.model_validate(json.loads(raw))
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{number}: not a JSON object ({exc.msg})") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "line"
            raise UsageError(f"{path}:{number}: {where}: {first['msg']}") from None
        if task.id in seen:
            raise UsageError(f"{path}:{number}: task id {task.id!r} already used on line {seen[task.id]}")
        seen[task.id] = number
        tasks.append(task)
    if not tasks:
        raise UsageError(f"{path}: no tasks (one JSON object per line: id, prompt, ...)")
    return TaskList(tasks=tuple(tasks), digest="sha256:" + hashlib.sha256(data).hexdigest())
