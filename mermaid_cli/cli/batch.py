"""`mermaid batch`: run a task list (`mermaid batch TASKS.jsonl`), plan its shards for a CI
matrix (`batch plan`) and join the shards' results (`batch merge`). The work lives in
`run/batch/`; this module is flags, stdout and stderr."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import click

from mermaid_cli.core.errors import MermaidError, UsageError


class _BatchGroup(click.Group):
    """`mermaid batch TASKS.jsonl …` means `mermaid batch run TASKS.jsonl …`: a first word that is
    not a subcommand is the task list (name a file `plan` or `merge` as `./plan`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


def _fail(exc: MermaidError) -> NoReturn:
    click.echo(f"mermaid batch: error: {exc.message}", err=True)
    sys.exit(exc.exit_code)


@click.group("batch", cls=_BatchGroup)
def batch_group() -> None:
    """Run many tasks: locally with --jobs, or sharded across a CI matrix.

    \b
      mermaid batch TASKS.jsonl --jobs 4            run every task here, 4 at a time
      mermaid batch plan TASKS.jsonl --shards 3     the matrix for a CI engine (JSON)
      mermaid batch TASKS.jsonl --shard 2/3         run one shard (CI_NODE_INDEX/CI_NODE_TOTAL)
      mermaid batch merge results/*.jsonl --apply   join shards, apply their patches

    TASKS.jsonl holds one JSON object per line: `id`, `prompt`, and optionally `model`, `safety`,
    `verify` (a command or a list), `path`, `max_turns`, `max_tokens`, `max_cost`, `timeout`.
    See docs/ci.md.
    """


@batch_group.command("run")
@click.argument("tasks_file", metavar="TASKS.jsonl", type=click.Path(path_type=Path))
@click.option(
    "-j", "--jobs", type=click.IntRange(1, 64), default=1, show_default=True, help="Tasks run at once."
)
@click.option("--shard", metavar="I/N", help="Run only shard I of N (1-based).")
@click.option("--keep-going", is_flag=True, help="Start the remaining tasks after one fails.")
@click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), help="USD for the whole batch.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Seconds for the whole batch.")
@click.option("-m", "--model", help="Model for tasks that name none.")
@click.option(
    "--safety",
    type=click.Choice(["read_only", "ask", "auto", "full_access"]),
    help="Mode for tasks that name none.",
)
@click.option(
    "-c", "--config", "config_overrides", multiple=True, metavar="KEY=VALUE", help="Passed to every task."
)
@click.option("--allow-untrusted-tools", is_flag=True, help="Passed to every task.")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    help="Artifacts directory [default: .mermaid/batch/STAMP].",
)
@click.option(
    "--results",
    "results_file",
    type=click.Path(path_type=Path),
    help="Results file [default: OUT/results.jsonl].",
)
@click.option("--keep-workspaces", is_flag=True, help="Leave each task's workspace behind (debugging).")
def run_command(tasks_file: Path, **flags: Any) -> None:
    """Run the tasks of TASKS.jsonl, each in its own workspace; exit with the worst task's code."""
    from mermaid_cli.run.batch.plan import parse_shard
    from mermaid_cli.run.batch.results import ResultsFile, TaskResult, line
    from mermaid_cli.run.batch.runner import BatchOptions, header_for, run_batch, write_results
    from mermaid_cli.run.batch.tasks import load_tasks
    from mermaid_cli.run.report.markdown import render_batch
    from mermaid_cli.run.report.model import batch_report
    from mermaid_cli.store.local import local_dir

    try:
        tasks = load_tasks(tasks_file)
        shard = parse_shard(flags["shard"]) if flags["shard"] else None
    except MermaidError as exc:
        _fail(exc)
    project = Path.cwd()
    stamp = datetime.now(UTC).strftime("%Y%m%d_%H%M%S")
    try:
        out_dir = flags["out_dir"] or local_dir(project, "batch") / stamp
    except OSError as exc:
        _fail(UsageError(f"cannot write the batch artifacts under .mermaid/batch: {exc.strerror or exc}"))
    suffix = f"-shard-{shard.index}-of-{shard.total}" if shard else ""
    results_file = flags["results_file"] or out_dir / f"results{suffix}.jsonl"
    options = BatchOptions(
        tasks=tasks,
        project=project,
        out_dir=out_dir.resolve(),
        jobs=flags["jobs"],
        shard=shard,
        keep_going=flags["keep_going"],
        max_cost=flags["max_cost"],
        timeout=flags["timeout"],
        model=flags["model"],
        safety=flags["safety"],
        config_overrides=tuple(flags["config_overrides"]),
        allow_untrusted_tools=flags["allow_untrusted_tools"],
        keep_workspaces=flags["keep_workspaces"],
    )

    def on_result(result: TaskResult, done: int, total: int) -> None:
        shown = result.model_dump(mode="json", exclude={"patch", "patch_base64", "result"})
        click.echo(json.dumps(shown, ensure_ascii=False, separators=(",", ":")))
        cost = "" if result.cost_usd is None else f" ${result.cost_usd:.4f}"
        code = "–" if result.exit_code is None else result.exit_code
        why = f": {result.reason}" if result.reason else ""
        click.echo(
            f"mermaid batch: [{done}/{total}] {result.task_id}: {result.status} (exit {code}) "
            f"{result.duration_ms / 1000:.1f} s{cost}{why}",
            err=True,
        )

    where = f" shard {shard}" if shard else ""
    click.echo(
        f"mermaid batch: {len(tasks.tasks)} task(s){where}, --jobs {options.jobs}, artifacts in {out_dir}",
        err=True,
    )
    results, summary = asyncio.run(run_batch(options, on_result))
    header = header_for(options)
    write_results(results_file, header, results, summary)
    (out_dir / f"summary{suffix}.md").write_text(
        render_batch(batch_report(ResultsFile(header=header, results=results, summary=summary))),
        encoding="utf-8",
    )
    click.echo(line(summary))
    click.echo(
        f"mermaid batch: {summary.status} (exit {summary.exit_code}); results in {results_file}", err=True
    )
    sys.exit(summary.exit_code)


@batch_group.command("plan")
@click.argument("tasks_file", metavar="TASKS.jsonl", type=click.Path(path_type=Path))
@click.option("--shards", type=click.IntRange(1, 256), required=True, help="How many machines.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["github", "gitlab"]),
    default="github",
    show_default=True,
    help="github: the matrix JSON; gitlab: the shard count for `parallel:`.",
)
def plan_command(tasks_file: Path, shards: int, fmt: str) -> None:
    """Print the shard plan (more shards than tasks plans one per task).

    \b
    GitHub:  echo "matrix=$(mermaid batch plan TASKS.jsonl --shards 4)" >> "$GITHUB_OUTPUT"
             strategy: { matrix: ${{ fromJSON(needs.plan.outputs.matrix) }} }
             mermaid batch TASKS.jsonl --shard ${{ matrix.shard }}
    GitLab:  parallel: N   (mermaid batch plan TASKS.jsonl --shards N --format gitlab)
             mermaid batch TASKS.jsonl --shard $CI_NODE_INDEX/$CI_NODE_TOTAL
    """
    from mermaid_cli.run.batch.plan import matrix
    from mermaid_cli.run.batch.tasks import load_tasks

    try:
        plan = matrix(load_tasks(tasks_file), shards)
    except MermaidError as exc:
        _fail(exc)
    if fmt == "gitlab":
        click.echo(len(plan["include"]))
        return
    click.echo(json.dumps(plan, separators=(",", ":")))


@batch_group.command("merge")
@click.argument(
    "results_files", metavar="RESULTS.jsonl...", nargs=-1, required=True, type=click.Path(path_type=Path)
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=Path("."),
    show_default=True,
    help="Where the merged results, summary and patches go.",
)
@click.option(
    "--apply",
    "apply_",
    is_flag=True,
    help="Apply each task's patch to this repository (conflicts are saved, never forced).",
)
def merge_command(results_files: tuple[Path, ...], out_dir: Path, apply_: bool) -> None:
    """Join shard results: check none is missing or duplicated, then apply or bundle the patches."""
    from mermaid_cli.run.batch.merge import bundle_patches, join, merged_summary, run_apply
    from mermaid_cli.run.batch.results import ResultsFile, read_results
    from mermaid_cli.run.batch.runner import write_results
    from mermaid_cli.run.report.markdown import render_batch
    from mermaid_cli.run.report.model import batch_report

    try:
        header, results = join([(path, read_results(path)) for path in results_files])
    except MermaidError as exc:
        _fail(exc)
    conflicts: list[str] = []
    if apply_:
        conflicts = run_apply(results, Path.cwd(), out_dir / "conflicts")
        for task_id in conflicts:
            click.echo(
                f"mermaid batch merge: {task_id}: patch does not apply; saved in {out_dir / 'conflicts'}",
                err=True,
            )
    else:
        written = bundle_patches(results, out_dir / "patches")
        click.echo(f"mermaid batch merge: {written} patch(es) in {out_dir / 'patches'}", err=True)
    summary = merged_summary(results, conflicts)
    write_results(out_dir / "results.jsonl", header, results, summary)
    (out_dir / "summary.md").write_text(
        render_batch(batch_report(ResultsFile(header=header, results=results, summary=summary))),
        encoding="utf-8",
    )
    click.echo(json.dumps(summary.model_dump(mode="json"), separators=(",", ":")))
    sys.exit(summary.exit_code)
