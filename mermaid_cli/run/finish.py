"""The end of a run: its status and exit code (the precedence in docs/exit-codes.md), the files it
changed (what tools reported plus the workspace diff, written to --diff-out), the `result` event
(always the last line) and --output-last-message."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mermaid_cli.core import events as ev
from mermaid_cli.core.errors import EXIT_CODES, Blocked
from mermaid_cli.run.options import ExecOptions, RunIO
from mermaid_cli.run.output import Output

if TYPE_CHECKING:
    from mermaid_cli.agent.state import RunStats
    from mermaid_cli.config.loader import Settings
    from mermaid_cli.run.workspace_diff import WorkspaceSnapshot


@dataclass
class Outcome:
    """How the run ended: the error that stopped it (None: it ran to the end), the loop's totals,
    the operator's checks that failed after the model finished (exit 1), the --output-schema
    value (a 1-tuple: None is a value) and the snapshot to diff against."""

    error: BaseException | None
    stats: RunStats
    run_errors: list[str] = field(default_factory=list)
    structured_output: tuple[object] | None = None
    snapshot: WorkspaceSnapshot | None = None
    #: the run's subagents, one entry each (None: it spawned none)
    agents: list[dict[str, object]] | None = None
    #: compare the workspace again before reporting (what changed since the last comparison)
    recompare: bool = False


def status_of(outcome: Outcome, settings: Settings | None) -> tuple[str, int]:
    error, stats = outcome.error, outcome.stats
    if error is not None:
        # a block that happened before a provider error still loses to it (DESIGN.md §3 order)
        if isinstance(error, Blocked):
            return "blocked", 3
        return getattr(error, "status", "internal_error"), getattr(error, "exit_code", 70)
    if stats.blocked:
        status = "blocked"
    elif outcome.run_errors:
        status = "failed"
    elif settings is not None and settings.exec.fail_on_tool_error and stats.tool_errors:
        status = "failed"
    else:
        status = "success"
    return status, EXIT_CODES[status]


def finish(
    outcome: Outcome,
    *,
    opts: ExecOptions,
    io: RunIO,
    out: Output,
    settings: Settings | None,
    project_root: Path,
    session_id: str,
    duration_ms: int,
    redact: Callable[[str], str],
    start_event: Callable[[], None],
) -> int:
    """Emit `result` (after `session_started` if nothing was emitted yet) and return its exit code."""
    stats, error = outcome.stats, outcome.error
    status, exit_code = status_of(outcome, settings)
    errors = list(stats.errors) + outcome.run_errors
    for message in outcome.run_errors:  # the operator's checks that failed; stdout stays the answer
        out.note(f"error: {redact(message)}")
    files_changed = files_changed_by(
        outcome, opts=opts, io=io, out=out, project_root=project_root, redact=redact
    )
    if error is not None:
        message = redact(str(getattr(error, "message", error)))
        errors.append(message)
        if out.started:
            out.emit(ev.Error(message=message, code=getattr(error, "code", None), retryable=False))
        else:
            out.note(f"error: {message}")
    if not out.started:
        start_event()
    usage = stats.usage
    result = ev.Result(
        response=redact(stats.response),
        reasoning=redact(stats.reasoning) if stats.reasoning else None,
        total_tokens=usage.total_tokens,
        errors=errors,
        session_id=session_id,
        status=status,
        exit_code=exit_code,
        num_turns=stats.num_turns,
        duration_ms=duration_ms,
        usage=ev.UsageInfo(**usage.model_dump()),
        cost_usd=round(stats.cost_usd, 6) if stats.cost_usd is not None else None,
        tool_calls=stats.tool_calls,
        tool_errors=stats.tool_errors,
        blocked=stats.blocked,
        files_changed=files_changed,
        untrusted_content=stats.untrusted_content,
        agents=outcome.agents,
    )
    if outcome.structured_output is not None:
        result.structured_output = outcome.structured_output[0]
    out.emit(result)
    if out.session is not None:
        out.session.close()
    out.final(result)
    if opts.output_last_message and stats.finished:
        write_last_message(io.cwd / opts.output_last_message, result.response, out)
    return exit_code


def prepare() -> None:
    """Build what `finish` needs before the run ends (on a worker thread while the model works):
    the event models defer their validators to first use, and `Result`'s took ~3-5 ms of the
    exit (issue 23)."""
    try:
        ev.Result.model_rebuild()
        ev.UsageInfo.model_rebuild()
    except Exception:  # noqa: BLE001 - only a head start: the first use builds it again
        pass


def files_changed_by(
    outcome: Outcome,
    *,
    opts: ExecOptions,
    io: RunIO,
    out: Output,
    project_root: Path,
    redact: Callable[[str], str],
) -> list[str]:
    """Every file the run changed: what tools reported plus what the snapshot comparison finds
    (shell commands change files too). Writes --diff-out when asked."""
    changed = list(outcome.stats.files_changed)
    snapshot = outcome.snapshot
    if snapshot is None:
        return changed
    from mermaid_cli.config.dirs import data_dir

    try:
        data_rel = data_dir(io.env).resolve().relative_to(project_root).as_posix() + "/"
    except ValueError:
        data_rel = None
    if outcome.recompare:
        snapshot.changed()
    try:
        for path in snapshot.changed_files():
            if data_rel and path.startswith(data_rel):
                continue
            if path not in changed:
                changed.append(path)
        if opts.diff_out:
            target = io.cwd / opts.diff_out
            tmp = target.with_name(f".{target.name}.tmp")
            # the diff is a report a CI job uploads: secrets in changed files are masked too
            tmp.write_text(redact(snapshot.diff()), encoding="utf-8", errors="surrogateescape")
            os.replace(tmp, target)
    except Exception as exc:  # noqa: BLE001 - a report, never a reason to fail the run
        out.note(f"cannot compute the run's diff: {type(exc).__name__}: {exc}")
    finally:
        snapshot.close()
    return changed


def write_last_message(target: Path, text: str, out: Output) -> None:
    """--output-last-message: the final answer, written atomically (a failure is a note, not an error)."""
    tmp = target.with_name(f".{target.name}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    except OSError as exc:
        out.note(f"cannot write --output-last-message {target}: {exc.strerror}")
