"""A report as one self-contained HTML page: inline CSS and SVG, no script, no network.

The page's Content-Security-Policy allows nothing to load (`default-src 'none'`), so even text a
hostile run smuggled past escaping could fetch nothing. Every value is `html.escape`d.
"""

from __future__ import annotations

from html import escape

from mermaid_cli.run.report.model import BatchReport, RunReport, Span
from mermaid_cli.run.report.tables import (
    Table,
    blocked_table,
    summary_table,
    tasks_table,
    tools_table,
    turns_table,
    verify_table,
)

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1b1f24;background:#fff}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #d0d7de;padding:4px 8px;text-align:left}
th{background:#f6f8fa}.success{fill:#2da44e}.error,.crit,.denied,.failed{fill:#cf222e}
.turn{fill:#0969da}.tool{fill:#8250df}.task{fill:#0969da}.bar.error,.bar.denied{fill:#cf222e}
svg text{font:11px system-ui,sans-serif;fill:#1b1f24}.muted{color:#57606a}
"""

ROW_HEIGHT = 18
LABEL_WIDTH = 160
CHART_WIDTH = 720


def timeline_svg(spans: list[Span]) -> str:
    """One row per span, bars scaled to the run's length; `#timeline rect.bar.KIND` per span."""
    if not spans:
        return '<svg id="timeline" width="0" height="0"></svg>'
    start = min(s.start_ms for s in spans)
    end = max(s.end_ms for s in spans)
    scale = CHART_WIDTH / max(end - start, 1)
    height = ROW_HEIGHT * len(spans) + 24
    parts = [
        f'<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{LABEL_WIDTH + CHART_WIDTH + 20}" '
        f'height="{height}" role="img" aria-label="timeline">'
    ]
    for row, span in enumerate(spans):
        y = row * ROW_HEIGHT + 4
        x = LABEL_WIDTH + (span.start_ms - start) * scale
        width = max((span.end_ms - span.start_ms) * scale, 2.0)
        status = escape(span.status, quote=True)
        parts.append(f'<text x="4" y="{y + 12}">{escape(span.label[:28])}</text>')
        parts.append(
            f'<rect class="bar {escape(span.kind, quote=True)} {status}" x="{x:.1f}" y="{y}" '
            f'width="{width:.1f}" height="{ROW_HEIGHT - 4}" rx="2">'
            f"<title>{escape(span.label)}: {span.end_ms - span.start_ms} ms ({status})</title></rect>"
        )
    total = end - start
    parts.append(f'<text x="{LABEL_WIDTH}" y="{height - 4}">0 s</text>')
    parts.append(f'<text x="{LABEL_WIDTH + CHART_WIDTH - 40}" y="{height - 4}">{total / 1000:.2f} s</text>')
    parts.append("</svg>")
    return "".join(parts)


def bars_svg(element_id: str, values: list[tuple[str, float]], unit: str) -> str:
    """A small vertical bar chart (tokens or cost per turn)."""
    if not values:
        return ""
    top = max(v for _, v in values) or 1.0
    width = max(len(values) * 28 + 40, 120)
    parts = [f'<svg id="{element_id}" xmlns="http://www.w3.org/2000/svg" width="{width}" height="140">']
    for index, (label, value) in enumerate(values):
        h = 100 * value / top
        x = 20 + index * 28
        parts.append(
            f'<rect class="bar turn" x="{x}" y="{110 - h:.1f}" width="20" height="{max(h, 1):.1f}">'
            f"<title>{escape(label)}: {value:g} {escape(unit)}</title></rect>"
        )
        parts.append(f'<text x="{x + 4}" y="126">{escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _table(table: Table) -> str:
    head, rows = table
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{cells}</tr>{body}</table>"


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>{body}</body></html>\n"
    )


def render_run(report: RunReport) -> str:
    code = "–" if report.exit_code is None else str(report.exit_code)
    parts = [
        f"<h1>Mermaid run: {escape(report.status)} (exit {escape(code)})</h1>",
        _table(summary_table(report)),
    ]
    note = ' <span class="muted">(approximate: these events carry no ts)</span>' if report.approximate else ""
    parts.append(f"<h2>Timeline{note}</h2>{timeline_svg(report.spans)}")
    if report.turns:
        parts.append("<h2>Tokens per turn</h2>")
        parts.append(
            bars_svg(
                "tokens",
                [(str(t.number), float(t.input_tokens + t.output_tokens)) for t in report.turns],
                "tokens",
            )
        )
        if any(t.cost_usd for t in report.turns):
            parts.append("<h2>Cost per turn</h2>")
            parts.append(
                bars_svg("cost", [(str(t.number), float(t.cost_usd or 0)) for t in report.turns], "USD")
            )
        parts.append(_table(turns_table(report)))
    for title, present, table in (
        ("Tools", report.tools, tools_table),
        ("Blocked calls", report.blocked, blocked_table),
        ("Verify rounds", report.verify, verify_table),
    ):
        if present:
            parts.append(f"<h2>{title}</h2>{_table(table(report))}")
    if report.files_changed:
        parts.append(
            "<h2>Files changed</h2><ul>"
            + "".join(f"<li><code>{escape(f)}</code></li>" for f in report.files_changed)
            + "</ul>"
        )
    if report.errors:
        parts.append(
            "<h2>Errors</h2><ul>" + "".join(f"<li>{escape(e)}</li>" for e in report.errors) + "</ul>"
        )
    return _page(f"Mermaid run {report.session_id}", "".join(parts))


def render_batch(report: BatchReport) -> str:
    summary = report.results.summary
    title = f"Mermaid batch: {summary.status} (exit {summary.exit_code})" if summary else "Mermaid batch"
    parts = [f"<h1>{escape(title)}</h1>", "<h2>Timeline</h2>", timeline_svg(report.spans), "<h2>Tasks</h2>"]
    parts.append(_table(tasks_table(report.results.results)))
    return _page(title, "".join(parts))


def render(report: RunReport | BatchReport) -> str:
    return render_batch(report) if isinstance(report, BatchReport) else render_run(report)
