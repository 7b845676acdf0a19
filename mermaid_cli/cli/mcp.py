"""`mermaid mcp …`: add, remove and list servers in the USER config file; sign in and out.

Only the user file (`$MERMAID_CONFIG_DIR/config.toml`, else the platform config dir) is edited:
project config may not define MCP servers. The file is rewritten with `tomli_w`; other keys are
kept (comments are not: TOML writers do not round-trip them)."""

from __future__ import annotations

import asyncio
import json
import os
import tomllib
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from mermaid_cli.config.sections.mcp import McpOAuthSettings, McpServerSettings


def user_config_path() -> Path:
    from mermaid_cli.config.dirs import user_config_dir

    return user_config_dir() / "config.toml"


def read_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise click.ClickException(f"{path}: not valid TOML: {exc}") from exc


def write_config(path: Path, data: dict[str, Any]) -> None:
    import tomli_w

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(tomli_w.dumps(data), encoding="utf-8")
    os.replace(tmp, path)  # atomic: a crash never leaves half a config


def load_servers(data: dict[str, Any], path: Path) -> dict[str, McpServerSettings]:
    raw = data.get("mcp_servers") or {}
    if not isinstance(raw, dict):
        raise click.ClickException(f"{path}: mcp_servers must be a table")
    servers: dict[str, McpServerSettings] = {}
    for name, table in raw.items():
        try:
            servers[name] = McpServerSettings.model_validate(table)
        except ValidationError as exc:
            raise click.ClickException(f"{path}: mcp_servers.{name}: {exc.errors()[0]['msg']}") from exc
    return servers


def _server(name: str) -> tuple[Path, McpServerSettings]:
    path = user_config_path()
    servers = load_servers(read_config(path), path)
    if name not in servers:
        raise click.UsageError(f"no MCP server named {name!r} in {path}")
    return path, servers[name]


def _pairs(values: tuple[str, ...], sep: str, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        key, found, val = value.partition(sep)
        if not found or not key.strip():
            raise click.UsageError(f"{what} must look like 'NAME{sep}VALUE', got {value!r}")
        out[key.strip()] = val.strip() if sep == ":" else val
    return out


@click.group("mcp")
def mcp_group() -> None:
    """Manage MCP servers (user config only)."""


@mcp_group.command("add", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--command", "command_opt", metavar="CMD", help="Executable of a stdio server (instead of `-- CMD`)."
)
@click.option(
    "--arg", "arg_opts", multiple=True, metavar="ARG", help="Argument of the --command (repeatable)."
)
@click.option("--url", help="Streamable HTTP endpoint of a remote server.")
@click.option("--header", "headers", multiple=True, help="'Name: Value' sent with every request.")
@click.option("--env-header", "env_headers", multiple=True, help="'Header=ENV': header value read from ENV.")
@click.option("--env", "env", multiple=True, help="'KEY=VALUE' for a stdio server's environment.")
@click.option("--client-id", help="Pre-registered OAuth client id.")
@click.option("--client-secret-env", help="Env var holding the OAuth client secret.")
@click.option("--callback-port", type=int, help="Local port for the sign-in redirect.")
@click.option("--scope", "scopes", multiple=True, help="OAuth scope to request (repeatable).")
@click.option(
    "--client-metadata-url",
    metavar="URL",
    help="Client ID Metadata Document URL to use as the OAuth client id ('' turns it off).",
)
@click.option("--force", is_flag=True, help="Replace a server of the same name.")
def add_cmd(
    name: str,
    command: tuple[str, ...],
    command_opt: str | None,
    arg_opts: tuple[str, ...],
    url: str | None,
    headers: tuple[str, ...],
    env_headers: tuple[str, ...],
    env: tuple[str, ...],
    client_id: str | None,
    client_secret_env: str | None,
    callback_port: int | None,
    scopes: tuple[str, ...],
    client_metadata_url: str | None,
    force: bool,
) -> None:
    """Add a server: `mermaid mcp add NAME -- CMD ARGS…`, `--command CMD --arg A`, `--url URL`,
    or just NAME for a well-known server (`mermaid mcp known` lists them)."""
    from mermaid_cli.cli.mcp_known import KNOWN_SERVERS

    command = _command_of(command, command_opt, arg_opts)
    known = KNOWN_SERVERS.get(name) if not command and not url else None
    if known is not None:
        command = (known.table["command"], *known.table.get("args", [])) if "command" in known.table else ()
        url = known.table.get("url")
    if bool(command) == bool(url):
        names = ", ".join(KNOWN_SERVERS)
        raise click.UsageError(
            "give either a command (after `--` or with --command) or --url, not both; "
            f"or the name of a well-known server ({names})"
        )
    oauth = {
        k: v
        for k, v in {
            "client_id": client_id,
            "client_secret_env": client_secret_env,
            "callback_port": callback_port,
            "scopes": list(scopes) or None,
            "client_metadata_url": client_metadata_url,
        }.items()
        if v is not None
    }
    if command:
        if headers or env_headers or oauth:
            raise click.UsageError("--header, --env-header and OAuth options are for --url servers")
        table = _stdio_table(command, env)
    else:
        assert url is not None
        if env:
            raise click.UsageError("--env is for stdio servers")
        table = _http_table(url, headers, env_headers, oauth)
    _validate(name, table)
    path = user_config_path()
    data = read_config(path)
    servers = data.setdefault("mcp_servers", {})
    if name in servers and not force:
        raise click.UsageError(f"an MCP server named {name!r} already exists (use --force to replace it)")
    servers[name] = table
    write_config(path, data)
    click.echo(f"Added MCP server {name!r} to {path}", err=True)
    if known is not None:
        click.echo(f"  {known.summary}" + (f"; it needs {known.needs}" if known.needs else ""), err=True)


def _command_of(
    command: tuple[str, ...], command_opt: str | None, arg_opts: tuple[str, ...]
) -> tuple[str, ...]:
    """The stdio command from `-- CMD ARGS…` or `--command CMD --arg A…` (not both)."""
    if command_opt is not None:
        if command:
            raise click.UsageError("give the command either after `--` or with --command, not both")
        return (command_opt, *arg_opts)
    if arg_opts:
        raise click.UsageError("--arg needs --command")
    return command


def _stdio_table(command: tuple[str, ...], env: tuple[str, ...]) -> dict[str, Any]:
    table: dict[str, Any] = {"command": command[0]}
    if command[1:]:
        table["args"] = list(command[1:])
    if env:
        table["env"] = _pairs(env, "=", "--env")
    return table


def _http_table(
    url: str, headers: tuple[str, ...], env_headers: tuple[str, ...], oauth: dict[str, Any]
) -> dict[str, Any]:
    table: dict[str, Any] = {"url": url}
    if headers:
        table["headers"] = _pairs(headers, ":", "--header")
    if env_headers:
        table["env_headers"] = _pairs(env_headers, "=", "--env-header")
    if oauth:
        table["oauth"] = oauth
    return table


def _validate(name: str, table: dict[str, Any]) -> None:
    try:
        McpServerSettings.model_validate(table)
        if "oauth" in table:
            McpOAuthSettings.model_validate(table["oauth"])
    except ValidationError as exc:
        raise click.UsageError(f"mcp_servers.{name}: {exc.errors()[0]['msg']}") from exc


@mcp_group.command("known")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def known_cmd(as_json: bool) -> None:
    """List the well-known servers `mermaid mcp add NAME` can add by name alone."""
    from mermaid_cli.cli.mcp_known import KNOWN_SERVERS

    if as_json:
        click.echo(
            json.dumps(
                {n: {**k.table, "summary": k.summary, "needs": k.needs} for n, k in KNOWN_SERVERS.items()},
                indent=2,
            )
        )
        return
    for name, known in KNOWN_SERVERS.items():
        target = known.table.get("url") or " ".join([known.table["command"], *known.table.get("args", [])])
        click.echo(
            f"{name:<20} {known.summary}\n{'':<20} {target}"
            + (f"\n{'':<20} needs {known.needs}" if known.needs else "")
        )


@mcp_group.command("remove")
@click.argument("name")
def remove_cmd(name: str) -> None:
    """Remove a server and its stored sign-in."""
    from mermaid_cli.integrations.mcp.oauth_store import delete_entry

    path = user_config_path()
    data = read_config(path)
    servers = data.get("mcp_servers") or {}
    if name not in servers:
        raise click.UsageError(f"no MCP server named {name!r} in {path}")
    del servers[name]
    if not servers:
        data.pop("mcp_servers", None)
    write_config(path, data)
    delete_entry(name)
    click.echo(f"Removed MCP server {name!r}", err=True)


async def probe_servers(servers: dict[str, McpServerSettings], timeout: float | None) -> list[dict[str, Any]]:
    """Connect briefly to every server; one status dict each (name, status, protocol_version,
    tools, prompts, resources, error, transport, target, signed_in)."""
    from mermaid_cli.integrations.mcp.manager import McpManager
    from mermaid_cli.integrations.mcp.oauth_store import signed_in

    bounded = {
        name: cfg.model_copy(update={"startup_timeout_secs": min(cfg.startup_timeout_secs, timeout or 1e9)})
        for name, cfg in servers.items()
    }
    manager = McpManager(bounded)
    try:
        statuses = await manager.start()
    finally:
        await manager.aclose()
    rows = []
    for st in statuses:
        cfg = servers[st.name]
        row = st.as_dict()
        row["target"] = cfg.url if cfg.url else " ".join([cfg.command or "", *cfg.args]).strip()
        row["signed_in"] = signed_in(st.name, cfg.url) if cfg.url else None
        rows.append(row)
    return rows


@mcp_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON array on stdout.")
@click.option(
    "--timeout", type=float, default=None, help="Seconds to wait for each server (default: its own)."
)
def list_cmd(as_json: bool, timeout: float | None) -> None:
    """List servers with their status (each is started briefly)."""
    path = user_config_path()
    servers = load_servers(read_config(path), path)
    rows = asyncio.run(probe_servers(servers, timeout)) if servers else []
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"No MCP servers configured ({path}).", err=True)
        return
    for row in rows:
        if row["status"] == "ready":
            detail = (
                f"ready, protocol {row['protocol_version']}, {row['tools']} tools, {row['prompts']} prompts, "
                f"resources {'yes' if row['resources'] else 'no'}"
            )
        else:
            detail = f"{row['status']}" + (f": {row['error']}" if row["error"] else "")
        mark = " (signed in)" if row["signed_in"] else ""
        click.echo(f"{row['name']}{mark}  [{row['transport']}] {row['target']}\n    {detail}")


@mcp_group.command("login")
@click.argument("name")
@click.option(
    "--paste",
    is_flag=True,
    help="For remote shells: print the sign-in URL and read the address the browser ends on "
    "(or its code) from stdin; no local listener.",
)
def login_cmd(name: str, paste: bool) -> None:
    """Sign in to a remote server in the browser; tokens go to the OS keyring."""
    import logging
    import sys

    from mermaid_cli.core.errors import UsageError
    from mermaid_cli.integrations.mcp.oauth_flow import login

    _path, cfg = _server(name)
    if os.environ.get("MERMAID_DEBUG") != "1":
        # the SDK logs every failed flow with a traceback; the one-line error below says why
        logging.getLogger("mcp.client.auth").setLevel(logging.CRITICAL)
    try:
        ok = asyncio.run(login(name, cfg, paste=sys.stdin.readline if paste else None))
    except UsageError as exc:
        raise click.UsageError(exc.message) from exc
    except Exception as exc:  # noqa: BLE001 - a failed sign-in is reported, not a traceback
        from mermaid_cli.integrations.mcp.manager import leaf_message

        raise click.ClickException(f"sign-in to {name!r} failed: {leaf_message(exc)}") from exc
    if ok:
        click.echo(f"Signed in to MCP server {name!r}.", err=True)
    else:
        click.echo(f"MCP server {name!r} did not ask for sign-in; nothing stored.", err=True)


@mcp_group.command("logout")
@click.argument("name")
def logout_cmd(name: str) -> None:
    """Forget the stored sign-in of a server."""
    from mermaid_cli.integrations.mcp.oauth_store import delete_entry

    if delete_entry(name):
        click.echo(f"Signed out of MCP server {name!r}.", err=True)
    else:
        click.echo(f"No stored sign-in for MCP server {name!r}.", err=True)
