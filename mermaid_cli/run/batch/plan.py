"""Shards for a CI engine: which tasks shard I of N runs, and the matrix a workflow expands.

Shard I/N (1-based, as GitLab's `CI_NODE_INDEX`/`CI_NODE_TOTAL` count) takes every N-th task
starting at the I-th, so long and short tasks that sit together in the file spread across shards.
The assignment depends only on the task order, so plan, shards and merge agree without talking.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from mermaid_cli.core.errors import UsageError
from mermaid_cli.run.batch.tasks import BatchTask, TaskList

MAX_SHARDS = 256  # GitHub's matrix limit


class Shard(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int  # 1-based
    total: int

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


def parse_shard(text: str) -> Shard:
    """`I/N` with 1 ≤ I ≤ N ≤ 256; UsageError otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match:
        raise UsageError(
            f"--shard {text!r}: expected I/N, e.g. 2/4 (1-based, as CI_NODE_INDEX/CI_NODE_TOTAL)"
        )
    index, total = int(match[1]), int(match[2])
    if not 1 <= total <= MAX_SHARDS:
        raise UsageError(f"--shard {text!r}: N must be between 1 and {MAX_SHARDS}")
    if not 1 <= index <= total:
        raise UsageError(f"--shard {text!r}: I must be between 1 and {total}")
    return Shard(index=index, total=total)


def shard_tasks(tasks: TaskList, shard: Shard) -> list[BatchTask]:
    return [task for position, task in enumerate(tasks.tasks) if position % shard.total == shard.index - 1]


def matrix(tasks: TaskList, shards: int) -> dict[str, list[dict[str, object]]]:
    """The plan as a GitHub `strategy.matrix` (`${{ fromJSON(needs.plan.outputs.matrix) }}`):
    only an `include` list of rows (shard and task count), since every other top-level key of a
    matrix would become a dimension. A shard that would get no task is not planned: more shards
    than tasks plans one shard per task."""
    if not 1 <= shards <= MAX_SHARDS:
        raise UsageError(f"--shards {shards}: must be between 1 and {MAX_SHARDS}")
    total = min(shards, len(tasks.tasks))
    rows: list[dict[str, object]] = [
        {"shard": f"{index}/{total}", "tasks": len(shard_tasks(tasks, Shard(index=index, total=total)))}
        for index in range(1, total + 1)
    ]
    return {"include": rows}
