"""`mermaid report FILE`: a run's events, a session file or a batch's results as Markdown (a
Mermaid gantt timeline, GitHub renders it) or one self-contained HTML page."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from mermaid_cli.core.errors import MermaidError


@click.command("report")
@click.argument("source", metavar="EVENTS.jsonl", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["md", "html"]), default="md", show_default=True)
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write here instead of stdout.")
def report_command(source: Path, fmt: str, output: Path | None) -> None:
    """Draw a run (or a batch) as a report.

    \b
      mermaid exec "task" --json > events.jsonl
      mermaid report events.jsonl >> "$GITHUB_STEP_SUMMARY"
      mermaid report events.jsonl --format html -o run.html
      mermaid report .mermaid/batch/STAMP/results.jsonl

    EVENTS.jsonl may also be a session file (.mermaid/conversations/ID.jsonl).
    """
    from mermaid_cli.run.report import html, markdown
    from mermaid_cli.run.report.model import load

    try:
        report = load(source)
    except MermaidError as exc:
        click.echo(f"mermaid report: error: {exc.message}", err=True)
        sys.exit(exc.exit_code)
    text = html.render(report) if fmt == "html" else markdown.render(report)
    if output is None:
        click.echo(text, nl=False)
        return
    tmp = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, output)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        click.echo(f"mermaid report: error: cannot write {output}: {exc.strerror or exc}", err=True)
        sys.exit(2)
    click.echo(f"mermaid report: wrote {output}", err=True)
