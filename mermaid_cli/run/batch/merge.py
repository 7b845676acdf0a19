"""`mermaid batch merge`: shard results joined into one, proven complete, their patches applied
or bundled.

The shards must come from one task list (same digest and id list) and one plan (same shard
count), each shard exactly once, each task exactly once; anything else is a usage error naming
what is missing or duplicated, and nothing is written. Patches are applied in task order with
`git apply` after a `--check`; a patch that does not apply is reported as a conflict and
saved beside the results, never forced.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from mermaid_cli.core.errors import UsageError
from mermaid_cli.run.batch.results import BatchHeader, BatchSummary, ResultsFile, TaskResult, summarize
from mermaid_cli.run.worktree import WorktreeError, git


def join(files: list[tuple[Path, ResultsFile]]) -> tuple[BatchHeader, list[TaskResult]]:
    """One header and the results in task order; UsageError unless the files cover every task of
    one task list exactly once."""
    if not files:
        raise UsageError("batch merge: no results files given")
    first_path, first = files[0]
    by_task: dict[str, tuple[Path, TaskResult]] = {}
    shards: dict[str, Path] = {}
    totals: set[str] = set()
    for path, results in files:
        header = results.header
        if header.digest != first.header.digest or header.task_ids != first.header.task_ids:
            raise UsageError(f"batch merge: {path} is from another task list than {first_path}")
        key = header.shard or "1/1"
        totals.add(key.split("/")[1])
        if key in shards:
            raise UsageError(f"batch merge: shard {key} given twice ({shards[key]} and {path})")
        shards[key] = path
        expected = set(header.shard_task_ids)
        got = [r.task_id for r in results.results]
        if set(got) != expected or len(got) != len(expected):
            missing = sorted(expected - set(got))
            raise UsageError(
                f"batch merge: {path} is incomplete (no result for {', '.join(missing) or 'some task'})"
            )
        for result in results.results:
            if result.task_id in by_task:
                other = by_task[result.task_id][0]
                raise UsageError(f"batch merge: task {result.task_id!r} has results in {other} and {path}")
            by_task[result.task_id] = (path, result)
    if len(totals) > 1:
        raise UsageError(f"batch merge: the files come from different plans (shard counts {sorted(totals)})")
    missing = [task_id for task_id in first.header.task_ids if task_id not in by_task]
    if missing:
        shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise UsageError(f"batch merge: {len(missing)} task(s) have no result (a shard is missing?): {shown}")
    header = BatchHeader(
        digest=first.header.digest,
        task_ids=first.header.task_ids,
        shard=None,
        shard_task_ids=first.header.task_ids,
    )
    return header, [by_task[task_id][1] for task_id in first.header.task_ids]


async def apply_patches(results: list[TaskResult], repo: Path, conflicts_dir: Path) -> list[str]:
    """Apply each task's patch to `repo` in task order; the ids whose patch did not apply (their
    patch is saved as `conflicts_dir/ID.patch`)."""
    conflicts: list[str] = []
    for result in results:
        patch = result.patch_bytes()
        if not patch.strip():
            continue
        try:
            # no --3way: it "applies" a clash by writing conflict markers into the file
            await asyncio.to_thread(git, ["apply", "--check", "--binary", "-"], repo, os.environ, patch)
            await asyncio.to_thread(git, ["apply", "--binary", "-"], repo, os.environ, patch)
        except WorktreeError:
            conflicts_dir.mkdir(parents=True, exist_ok=True)
            (conflicts_dir / f"{result.task_id}.patch").write_bytes(patch)
            conflicts.append(result.task_id)
    return conflicts


def bundle_patches(results: list[TaskResult], directory: Path) -> int:
    """Write every non-empty patch as `directory/ID.patch`; how many were written."""
    written = 0
    for result in results:
        patch = result.patch_bytes()
        if patch.strip():
            directory.mkdir(parents=True, exist_ok=True)
            (directory / f"{result.task_id}.patch").write_bytes(patch)
            written += 1
    return written


def merged_summary(results: list[TaskResult], conflicts: list[str]) -> BatchSummary:
    # the merged batch took as long as its longest shard's tasks, not their sum; a merge only
    # knows the tasks' own durations, so it reports the longest task
    longest = max((r.duration_ms for r in results), default=0)
    return summarize(results, longest, conflicts)


def run_apply(results: list[TaskResult], repo: Path, conflicts_dir: Path) -> list[str]:
    return asyncio.run(apply_patches(results, repo, conflicts_dir))
