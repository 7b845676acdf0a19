"""A report as GitHub-flavoured Markdown with a Mermaid `gantt` timeline.

Text from the run (tool names, commands, file names, errors) is made inert before it is placed:
table cells lose pipes, backticks and newlines; gantt labels keep only characters the gantt
grammar reads as a name, so a hostile file name can neither close the code block nor add tasks.
"""

from __future__ import annotations

import re

from mermaid_cli.run.report.model import BatchReport, RunReport, Span
from mermaid_cli.run.report.tables import (
    Table,
    blocked_table,
    money,
    summary_table,
    tasks_table,
    tools_table,
    turns_table,
    verify_table,
)

_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9 _./@+=-]")


def cell(text: object, limit: int = 120) -> str:
    value = " ".join(str(text).split())
    value = value.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'").replace("<", "&lt;")
    return value if len(value) <= limit else value[: limit - 1] + "…"


def gantt_label(text: str) -> str:
    return (_LABEL_UNSAFE.sub("_", text).strip() or "_")[:60]


def gantt(spans: list[Span], title: str, sections: dict[str, str]) -> list[str]:
    """A Mermaid gantt block; times are ms from the start, drawn with `dateFormat x`."""
    lines = [
        "```mermaid",
        "gantt",
        f"    title {gantt_label(title)}",
        "    dateFormat x",
        "    axisFormat %M:%S",
    ]
    for kind, heading in sections.items():
        chosen = [s for s in spans if s.kind == kind]
        if not chosen:
            continue
        lines.append(f"    section {heading}")
        for span in chosen:
            tag = "crit, " if span.status not in ("success",) else ""
            lines.append(f"    {gantt_label(span.label)} :{tag}{span.start_ms}, {span.end_ms}")
    lines.append("```")
    return lines


def md_table(table: Table) -> list[str]:
    """A GitHub table, every cell made inert by `cell`."""
    head, rows = table
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return lines + ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]


def render_run(report: RunReport) -> str:
    code = report.exit_code if report.exit_code is not None else "–"
    out = [f"## Mermaid run: {cell(report.status)} (exit {code})", ""]
    out += md_table(summary_table(report)) + [""]
    if report.spans:
        note = " (approximate: these events carry no `ts`)" if report.approximate else ""
        out += [f"### Timeline{note}", ""]
        out += gantt(report.spans, "run timeline", {"turn": "Model", "tool": "Tools"})
        out.append("")
    for title, present, table in (
        ("Turns", report.turns, turns_table),
        ("Tools", report.tools, tools_table),
        ("Blocked calls", report.blocked, blocked_table),
        ("Verify rounds", report.verify, verify_table),
    ):
        if present:
            out += [f"### {title}", ""] + md_table(table(report)) + [""]
    if report.files_changed:
        out += (
            ["### Files changed", ""]
            + [f"- `{cell(name).replace(chr(39), '')}`" for name in report.files_changed]
            + [""]
        )
    if report.errors:
        out += ["### Errors", ""] + [f"- {cell(error, 300)}" for error in report.errors] + [""]
    return "\n".join(out)


def render_batch(report: BatchReport) -> str:
    results = report.results
    summary = results.summary
    status = summary.status if summary else "unknown"
    code = summary.exit_code if summary else "–"
    out = [f"## Mermaid batch: {cell(status)} (exit {code})", ""]
    if summary:
        counts = ", ".join(f"{cell(k)} {v}" for k, v in sorted(summary.by_status.items()))
        out += [
            "| tasks | by status | cost | tokens | files changed | conflicts |",
            "|---|---|---|---|---|---|",
            f"| {summary.tasks} | {counts} | {money(summary.cost_usd)} | {summary.total_tokens} "
            f"| {summary.files_changed} | {len(summary.conflicts)} |",
            "",
        ]
    if report.spans:
        out += ["### Timeline", ""] + gantt(report.spans, "batch timeline", {"task": "Tasks"}) + [""]
    out += ["### Tasks", ""] + md_table(tasks_table(results.results))
    if summary and summary.conflicts:
        out += ["", "### Conflicts", ""] + [
            f"- {cell(task_id)}: patch did not apply; saved, not forced" for task_id in summary.conflicts
        ]
    return "\n".join(out) + "\n"


def render(report: RunReport | BatchReport) -> str:
    return render_batch(report) if isinstance(report, BatchReport) else render_run(report)
