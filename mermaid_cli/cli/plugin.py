"""`mermaid plugin …`: install (a disabled copy under the data dir), enable (says what the plugin
will be able to do), disable, list, audit and uninstall. The lock file is
`<data dir>/plugins.lock.json`; `extensions/plugins.py` owns it and the rules."""

from __future__ import annotations

from pathlib import Path

import click


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


@click.group("plugin")
def plugin_group() -> None:
    """Install, enable, disable, list and audit plugin bundles (a directory with plugin.toml)."""


@plugin_group.command("install")
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
def install_command(path: Path) -> None:
    """Audit PATH and install a copy of it, DISABLED (enable it with `mermaid plugin enable NAME`)."""
    from mermaid_cli.extensions.manifest import PluginError
    from mermaid_cli.extensions.plugins import install

    try:
        checked, existed = install(path)
    except (PluginError, OSError) as exc:
        raise _fail(exc) from None
    m = checked.manifest
    verb = "reinstalled (and disabled again)" if existed else "installed"
    click.echo(f"{m.name} {m.version} {verb} at {checked.root}")
    click.echo(f"enable it with: mermaid plugin enable {m.name}")


@plugin_group.command("enable")
@click.argument("name")
def enable_command(name: str) -> None:
    """Let NAME's hooks, MCP servers, skills, prompts and agent types into every run."""
    from mermaid_cli.extensions.manifest import PluginError
    from mermaid_cli.extensions.plugins import set_enabled

    try:
        checked = set_enabled(name, True)
    except (PluginError, OSError) as exc:
        raise _fail(exc) from None
    click.echo(f"enabled {name}. From the next run it will be able to:")
    for line in checked.can():
        click.echo(f"  - {line}")
    for line in checked.manifest.capabilities:
        click.echo(f"  - (declared) {line}")


@plugin_group.command("disable")
@click.argument("name")
def disable_command(name: str) -> None:
    """Stop loading NAME (it stays installed)."""
    from mermaid_cli.config.loader import load_settings
    from mermaid_cli.extensions.manifest import PluginError
    from mermaid_cli.extensions.plugins import set_enabled

    try:
        set_enabled(name, False)
    except (PluginError, OSError) as exc:
        raise _fail(exc) from None
    click.echo(f"disabled {name}")
    try:
        listed = name in load_settings(project_root=Path.cwd()).settings.plugins.enabled
    except Exception:  # noqa: BLE001 - only a hint; a broken config is reported by the run
        listed = False
    if listed:
        click.echo(
            f"note: your config's [plugins] enabled still lists {name}, so runs still load it", err=True
        )


@plugin_group.command("uninstall")
@click.argument("name")
def uninstall_command(name: str) -> None:
    """Remove NAME's installed copy and its lock entry."""
    from mermaid_cli.extensions.manifest import PluginError
    from mermaid_cli.extensions.plugins import uninstall

    try:
        uninstall(name)
    except (PluginError, OSError) as exc:
        raise _fail(exc) from None
    click.echo(f"uninstalled {name}")


@plugin_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the lock file's entries as JSON.")
def list_command(as_json: bool) -> None:
    """Installed plugins: name, version, enabled, where the copy lives."""
    import json

    from mermaid_cli.extensions.manifest import PluginError
    from mermaid_cli.extensions.plugins import read_lock

    try:
        lock = read_lock()
    except PluginError as exc:
        raise _fail(exc) from None
    if as_json:
        click.echo(json.dumps({n: e.model_dump() for n, e in sorted(lock.plugins.items())}, indent=2))
        return
    if not lock.plugins:
        click.echo("no plugins installed")
    for name, entry in sorted(lock.plugins.items()):
        state = "enabled" if entry.enabled else "disabled"
        click.echo(f"{name} {entry.version} {state}  {entry.description}".rstrip())


@plugin_group.command("audit")
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
def audit_command(path: Path) -> None:
    """Check PATH as install would, and say what enabling it would let it do. Exit 1 if refused."""
    from mermaid_cli.extensions.manifest import PluginError, audit

    try:
        checked = audit(path)
    except (PluginError, OSError) as exc:
        raise _fail(exc) from None
    m = checked.manifest
    click.echo(f"{m.name} {m.version}: {m.description}".rstrip(": "))
    click.echo(f"{checked.files} files, {checked.bytes} bytes; every path stays inside the plugin")
    for (kind, rel), real in sorted(checked.paths.items()):
        click.echo(f"  {kind}: {rel} -> {real}")
    click.echo("enabled, it could:")
    for line in checked.can():
        click.echo(f"  - {line}")
    for line in m.capabilities:
        click.echo(f"  - (declared) {line}")
