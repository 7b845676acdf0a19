"""The lines of a batch results file, shared by `batch`, `batch merge` and `report`.

A results file is JSONL: one `batch_header` (which task list, which shard, every task id), one
`task_result` per task of the shard in task order (the task's own `result` event kept whole, plus
its patch), and a closing `batch_summary`. The header's digest and id list are what let a merge
prove that no shard is missing, duplicated or from another task list.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mermaid_cli.core.defaults import empty_list
from mermaid_cli.core.errors import EXIT_CODES, UsageError, worst_status

RESULTS_VERSION = 1


class BatchHeader(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["batch_header"] = "batch_header"
    version: int = RESULTS_VERSION
    digest: str
    task_ids: list[str]
    shard: str | None = None  # "I/N" when this file holds one shard
    shard_task_ids: list[str]


class TaskResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["task_result"] = "task_result"
    task_id: str
    status: str
    #: None for a task that never started (`reason` says why)
    exit_code: int | None
    started: bool = True
    reason: str | None = None
    #: ms after the batch (or shard) started that the task's run started; None if it never did
    started_ms: int | None = None
    duration_ms: int = 0
    cost_usd: float | None = None
    total_tokens: int = 0
    files_changed: list[str] = Field(default_factory=empty_list)
    #: the task's own `result` event, whole; None when it never started or died without one
    result: dict[str, Any] | None = None
    #: the task's change as a git patch: text, or base64 when it is not UTF-8
    patch: str | None = None
    patch_base64: str | None = None
    workspace: str | None = None  # "worktree" or "copy"
    #: where the task's events, stderr and session were kept, relative to the results file
    artifacts: str | None = None

    def patch_bytes(self) -> bytes:
        if self.patch_base64 is not None:
            return base64.b64decode(self.patch_base64)
        return (self.patch or "").encode("utf-8")

    @staticmethod
    def encode_patch(patch: bytes) -> dict[str, str | None]:
        try:
            return {"patch": patch.decode("utf-8"), "patch_base64": None}
        except UnicodeDecodeError:
            return {"patch": None, "patch_base64": base64.b64encode(patch).decode("ascii")}


class BatchSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["batch_summary"] = "batch_summary"
    status: str
    exit_code: int
    tasks: int
    by_status: dict[str, int]
    not_started: int
    cost_usd: float
    total_tokens: int
    duration_ms: int
    files_changed: int
    conflicts: list[str] = Field(default_factory=empty_list)


def summarize(
    results: list[TaskResult], duration_ms: int, conflicts: list[str] | None = None
) -> BatchSummary:
    """The batch verdict: the worst task status by the usual precedence (docs/exit-codes.md); a
    task that never started counts only through the status its reason gave it (a spent budget is
    `limit`, the batch timeout `timeout`); one stopped by an earlier failure adds nothing."""
    by_status: dict[str, int] = {}
    for result in results:
        by_status[result.status] = by_status.get(result.status, 0) + 1
    counted = [r.status for r in results if r.status in EXIT_CODES or r.status == "interrupted"]
    status = worst_status(counted)
    if conflicts and status == "success":
        status = "failed"
    interrupted = [r.exit_code for r in results if r.status == "interrupted" and r.exit_code]
    exit_code = interrupted[0] if status == "interrupted" and interrupted else EXIT_CODES.get(status, 130)
    return BatchSummary(
        status=status,
        exit_code=exit_code,
        tasks=len(results),
        by_status=by_status,
        not_started=sum(1 for r in results if not r.started),
        cost_usd=round(sum(r.cost_usd or 0.0 for r in results), 6),
        total_tokens=sum(r.total_tokens for r in results),
        duration_ms=duration_ms,
        files_changed=sum(len(r.files_changed) for r in results),
        conflicts=list(conflicts or []),
    )


class ResultsFile(BaseModel):
    header: BatchHeader
    results: list[TaskResult]
    summary: BatchSummary | None = None


def line(model: BaseModel) -> str:
    return json.dumps(model.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))


def read_results(path: Path) -> ResultsFile:
    """Parse a results file; UsageError naming the file and line on anything malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read results file {path}: {exc}") from None
    header: BatchHeader | None = None
    results: list[TaskResult] = []
    summary: BatchSummary | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
            kind = data.get("type") if isinstance(data, dict) else None
            if kind == "batch_header" and header is None:
                header = BatchHeader.model_validate(data)
            elif kind == "task_result":
                results.append(TaskResult.model_validate(data))
            elif kind == "batch_summary":
                summary = BatchSummary.model_validate(data)
            else:
                raise ValueError(f"unexpected line type {kind!r}")
        except (json.JSONDecodeError, ValidationError, ValueError) as exc:
            raise UsageError(f"{path}:{number}: not a batch results line ({_first(exc)})") from None
    if header is None:
        raise UsageError(f"{path}: no batch_header line: not a `mermaid batch` results file")
    return ResultsFile(header=header, results=results, summary=summary)


def _first(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        return f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"
    return str(exc)
