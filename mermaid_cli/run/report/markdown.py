"""A report as GitHub-flavoured Markdown with a Mermaid `gantt` timeline.

Text from the run (tool names, commands, file names, errors) is made inert before it is placed:
table cells lose pipes, backticks and newlines; gantt labels keep only characters the gantt
grammar reads as a name, so a hostile file name can neither close the code block nor add tasks.
"""

from __future__ import annotations

import re

from mermaid_cli.run.report.model import BatchReport, RunReport, Span, task_cost

_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9 _./@+=-]")


def cell(text: object, limit: int = 120) -> str:
    value = " ".join(str(text).split())
    value = value.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'").replace("<", "&lt;")
    return value if len(value) <= limit else value[: limit - 1] + "…"


def gantt_label(text: str) -> str:
    return (_LABEL_UNSAFE.sub("_", text).strip() or "_")[:60]


def money(value: float | None) -> str:
    return "–" if value is None else f"${value:.4f}"


def seconds(ms: int) -> str:
    return f"{ms / 1000:.2f} s"


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


def render_run(report: RunReport) -> str:
    out = [
        f"## Mermaid run: {cell(report.status)} (exit {report.exit_code if report.exit_code is not None else '–'})",
        "",
    ]
    out += [
        "| model | session | turns | tokens | cost | time | files changed | blocked |",
        "|---|---|---|---|---|---|---|---|",
        f"| {cell(report.model)} | {cell(report.session_id)} | {len(report.turns)} | {report.total_tokens} "
        f"| {money(report.cost_usd)} | {seconds(report.duration_ms)} | {len(report.files_changed)} "
        f"| {len(report.blocked)} |",
        "",
    ]
    if report.spans:
        note = " (approximate: these events carry no `ts`)" if report.approximate else ""
        out += [f"### Timeline{note}", ""]
        out += gantt(report.spans, "run timeline", {"turn": "Model", "tool": "Tools"})
        out.append("")
    if report.turns:
        out += [
            "### Turns",
            "",
            "| turn | input tokens | output tokens | cost | stop | time |",
            "|---|---|---|---|---|---|",
        ]
        for turn in report.turns:
            out.append(
                f"| {turn.number} | {turn.input_tokens} | {turn.output_tokens} | {money(turn.cost_usd)} "
                f"| {cell(turn.stop_reason or '')} | {seconds(turn.duration_ms)} |"
            )
        out.append("")
    if report.tools:
        out += ["### Tools", "", "| tool | calls | errors | denied | time |", "|---|---|---|---|---|"]
        for tool in report.tools:
            out.append(
                f"| {cell(tool.name)} | {tool.calls} | {tool.errors} | {tool.denied} | {seconds(tool.total_ms)} |"
            )
        out.append("")
    if report.blocked:
        out += ["### Blocked calls", "", "| tool | reason |", "|---|---|"]
        for item in report.blocked:
            out.append(
                f"| {cell(item.get('tool') or item.get('name') or '?')} | {cell(item.get('reason', ''))} |"
            )
        out.append("")
    if report.verify:
        out += ["### Verify rounds", "", "| round | command | exit |", "|---|---|---|"]
        out += [f"| {attempt} | {cell(command)} | {code} |" for attempt, command, code in report.verify]
        out.append("")
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
    out += [
        "### Tasks",
        "",
        "| task | status | exit | time | cost | tokens | files | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results.results:
        exit_code = "–" if r.exit_code is None else r.exit_code
        out.append(
            f"| {cell(r.task_id)} | {cell(r.status)} | {exit_code} | {seconds(r.duration_ms)} | {task_cost(r)} "
            f"| {r.total_tokens} | {len(r.files_changed)} | {cell(r.reason or '')} |"
        )
    if summary and summary.conflicts:
        out += ["", "### Conflicts", ""] + [
            f"- {cell(task_id)}: patch did not apply; saved, not forced" for task_id in summary.conflicts
        ]
    return "\n".join(out) + "\n"


def render(report: RunReport | BatchReport) -> str:
    return render_batch(report) if isinstance(report, BatchReport) else render_run(report)
