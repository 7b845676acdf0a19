"""`mermaid config show`: the effective configuration and the layer each value came from."""

from __future__ import annotations

import sys

import click


@click.group("config")
def config_group() -> None:
    """Inspect the effective configuration."""


@config_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: each key with its value and source.")
@click.option("--profile", help="Apply [profiles.NAME].")
@click.option(
    "-c", "--config", "config_overrides", multiple=True, metavar="KEY=VALUE", help="Config override."
)
@click.option("-p", "--path", "path", default=".", metavar="DIR", help="Project directory.")
def config_show(as_json: bool, profile: str | None, config_overrides: tuple[str, ...], path: str) -> None:
    """Print the effective config and where each value came from."""
    import json
    from pathlib import Path

    from mermaid_cli.config.effective import effective_items, effective_toml
    from mermaid_cli.config.loader import load_settings
    from mermaid_cli.core.errors import ConfigError

    try:
        loaded = load_settings(
            project_root=Path(path).resolve(), profile=profile, overrides=list(config_overrides)
        )
    except ConfigError as exc:
        click.echo(f"mermaid: {exc.message}", err=True)
        sys.exit(2)
    for warning in loaded.warnings:
        click.echo(f"mermaid: {warning}", err=True)
    if as_json:
        items = effective_items(loaded)
        click.echo(
            json.dumps(
                {"files": loaded.files, "settings": {k: {"value": v, "source": s} for k, v, s in items}},
                indent=2,
            )
        )
        return
    click.echo(effective_toml(loaded), nl=False)
