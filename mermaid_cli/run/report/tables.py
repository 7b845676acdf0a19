"""The report's tables as plain rows (header, then one list of strings per row), built once and
drawn by both renderers: `markdown` escapes each cell for a GitHub table, `html` for a page."""

from __future__ import annotations

from mermaid_cli.run.batch.results import TaskResult
from mermaid_cli.run.report.model import RunReport, task_cost

Table = tuple[list[str], list[list[str]]]


def money(value: float | None) -> str:
    return "–" if value is None else f"${value:.4f}"


def seconds(ms: int) -> str:
    return f"{ms / 1000:.2f} s"


def summary_table(report: RunReport) -> Table:
    head = ["model", "session", "turns", "tokens", "cost", "time", "files changed", "blocked"]
    row = [
        report.model,
        report.session_id,
        str(len(report.turns)),
        str(report.total_tokens),
        money(report.cost_usd),
        seconds(report.duration_ms),
        str(len(report.files_changed)),
        str(len(report.blocked)),
    ]
    return head, [row]


def turns_table(report: RunReport) -> Table:
    head = ["turn", "input tokens", "output tokens", "cost", "stop", "time"]
    rows = [
        [
            str(t.number),
            str(t.input_tokens),
            str(t.output_tokens),
            money(t.cost_usd),
            t.stop_reason or "",
            seconds(t.duration_ms),
        ]
        for t in report.turns
    ]
    return head, rows


def tools_table(report: RunReport) -> Table:
    rows = [[t.name, str(t.calls), str(t.errors), str(t.denied), seconds(t.total_ms)] for t in report.tools]
    return ["tool", "calls", "errors", "denied", "time"], rows


def blocked_table(report: RunReport) -> Table:
    rows = [[str(b.get("tool") or b.get("name") or "?"), str(b.get("reason", ""))] for b in report.blocked]
    return ["tool", "reason"], rows


def verify_table(report: RunReport) -> Table:
    return ["round", "command", "exit"], [[str(a), c, str(e)] for a, c, e in report.verify]


def tasks_table(results: list[TaskResult]) -> Table:
    head = ["task", "status", "exit", "time", "cost", "tokens", "files", "note"]
    rows = [
        [
            r.task_id,
            r.status,
            "–" if r.exit_code is None else str(r.exit_code),
            seconds(r.duration_ms),
            task_cost(r),
            str(r.total_tokens),
            str(len(r.files_changed)),
            r.reason or "",
        ]
        for r in results
    ]
    return head, rows
