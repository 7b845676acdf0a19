"""`mermaid checkpoints` and `mermaid restore ID`: click commands the CLI group attaches
(`cli.add_command(checkpoints_command)`, `cli.add_command(restore_command)`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from mermaid_cli.store.checkpoints import CheckpointNotFound, CheckpointStore, default_data_dir


def project_root_for(start: Path) -> Path:
    """The git work tree containing `start`, else `start` itself."""
    start = Path(os.path.realpath(start))
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


def locations(path: str | None) -> tuple[Path, Path]:
    """(project root, data dir) for the checkpoint commands."""
    return project_root_for(Path(path or os.getcwd())), default_data_dir()


def _store(path: str | None) -> CheckpointStore:
    root, data = locations(path)
    return CheckpointStore(data, root, session_id="")


@click.command("checkpoints")
@click.option("--session", "session", default=None, help="Only checkpoints of this session id.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one array).")
@click.option("--path", "path", default=None, help="Project directory (default: the current one).")
def checkpoints_command(session: str | None, as_json: bool, path: str | None) -> None:
    """List the checkpoints taken before file changes in this project."""
    items = _store(path).list(session_id=session)
    if as_json:
        click.echo(json.dumps([m.model_dump() for m in items], indent=2))
        return
    if not items:
        click.echo("no checkpoints", err=True)
        return
    for m in items:
        files = ", ".join(f.path for f in m.files[:3]) + (
            f" (+{len(m.files) - 3})" if len(m.files) > 3 else ""
        )
        click.echo(f"{m.id}\t{m.created_at}\t{m.session or '-'}\t{m.reason}\t{files}")


@click.command("restore")
@click.argument("checkpoint_id")
@click.option("--json", "as_json", is_flag=True, help="Print the restore report as JSON.")
@click.option("--path", "path", default=None, help="Project directory (default: the current one).")
def restore_command(checkpoint_id: str, as_json: bool, path: str | None) -> None:
    """Put back the files of a checkpoint (the restore itself is checkpointed first)."""
    store = _store(path)
    try:
        report = store.restore(checkpoint_id)
    except CheckpointNotFound:
        raise click.UsageError(f"unknown checkpoint {checkpoint_id!r}; see `mermaid checkpoints`") from None
    if as_json:
        click.echo(report.model_dump_json(indent=2))
        return
    for p in report.restored:
        click.echo(f"restored {p}")
    for p in report.deleted:
        click.echo(f"deleted {p}")
    for p in report.skipped:
        click.echo(f"skipped {p}", err=True)
    click.echo(f"undo with: mermaid restore {report.pre_restore_checkpoint}", err=True)


__all__ = ["checkpoints_command", "restore_command", "locations", "project_root_for"]
