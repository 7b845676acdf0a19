"""`mermaid doctor`: flags for the environment checks of `run/doctor.py` (which owns the checks)."""

from __future__ import annotations

import sys

import click


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: {ok, checks: [{name, status, detail}]}.")
@click.option("-m", "--model", help="Check this model instead of the configured/default one.")
@click.option("--profile", help="Apply [profiles.NAME].")
@click.option(
    "-c", "--config", "config_overrides", multiple=True, metavar="KEY=VALUE", help="Config override."
)
@click.option("--mcp", "start_mcp", is_flag=True, help="Also start each MCP server and report its status.")
@click.option("-p", "--path", "path", default=".", metavar="DIR", help="Project directory.")
def doctor_command(
    as_json: bool,
    model: str | None,
    profile: str | None,
    config_overrides: tuple[str, ...],
    start_mcp: bool,
    path: str,
) -> None:
    """Check that a run would work here: config, model and key, safety, tools, MCP. Exit 1 if not."""
    import json
    from pathlib import Path

    from mermaid_cli.run.doctor import as_json as to_json
    from mermaid_cli.run.doctor import environ, render, run_checks

    checks = run_checks(
        Path(path).resolve(),
        environ(),
        profile=profile,
        overrides=list(config_overrides),
        model=model,
        start_mcp=start_mcp,
    )
    report = to_json(checks)
    click.echo(json.dumps(report, indent=2) if as_json else render(checks))
    sys.exit(0 if report["ok"] else 1)
