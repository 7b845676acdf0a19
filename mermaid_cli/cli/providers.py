"""`mermaid login PROVIDER` / `mermaid logout PROVIDER`: keys in the OS keyring.

The key is read from a hidden prompt, or from stdin when stdin is not a TTY
(`printf %s "$KEY" | mermaid login anthropic`), never from an argument (shell history, `ps`).
"""

from __future__ import annotations

import os
import sys

import click


def _known_provider(provider: str) -> str:
    from mermaid_cli.providers.resolve import PRESETS, canonical

    name = canonical(provider)
    if name not in PRESETS:
        # A [providers.NAME] with api_key_env never reads the keyring; other names are accepted for
        # custom providers without api_key_env.
        click.echo(
            f"note: {provider} is not a built-in provider; the key is stored under that name", err=True
        )
    return name


@click.command("login")
@click.argument("provider")
def login_command(provider: str) -> None:
    """Store PROVIDER's API key in the OS keyring."""
    from mermaid_cli.security.keys import KeyringUnavailable, login

    name = _known_provider(provider)
    if sys.stdin.isatty():
        key = click.prompt(f"API key for {name}", hide_input=True).strip()
    else:
        key = sys.stdin.read().strip()
    if not key:
        raise click.UsageError("empty key")
    try:
        login(name, key, os.environ)
    except KeyringUnavailable as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    click.echo(f"stored the {name} key in the OS keyring", err=True)


@click.command("logout")
@click.argument("provider")
def logout_command(provider: str) -> None:
    """Remove PROVIDER's API key from the OS keyring."""
    from mermaid_cli.security.keys import KeyringUnavailable, logout

    name = _known_provider(provider)
    try:
        removed = logout(name, os.environ)
    except KeyringUnavailable as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    click.echo(f"removed the {name} key" if removed else f"no stored key for {name}", err=True)
