"""What an enabled plugin contributes besides skills and prompts: MCP servers (`mcp` files of
`[servers.NAME]` tables), agent types (`agents` files of `[types.NAME]` tables) and hooks (its
`hooks` executables, run for every hook event with `MERMAID_PLUGIN_NAME` set).

The user's own config always wins a name clash, with a warning; between plugins the one whose
name sorts first wins. A bad file or table is a warning and is skipped, never fatal.
"""

from __future__ import annotations

import shlex
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mermaid_cli.config.sections.hooks import HookSpec
from mermaid_cli.config.sections.mcp import McpServerSettings
from mermaid_cli.extensions.frontmatter import NAME_RE
from mermaid_cli.extensions.manifest import PluginError, contained
from mermaid_cli.extensions.plugins import LoadedPlugin
from mermaid_cli.policy.hooks import OBSERVER_TIMEOUT


class PluginAgentType(BaseModel):
    """One `[types.NAME]` table of a plugin's agents file: the shape of `[agents.types.NAME]`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="The type's name (the table key).")
    plugin: str = Field(description="The plugin that ships it.")
    description: str = Field("", description="When to use it (listed in the agent tool's description).")
    tools: list[str] | None = Field(None, description="The child's tools (default: the type's default set).")
    safety: Literal["read_only", "ask", "auto", "full_access"] | None = Field(
        None, description="Ceiling of the child's safety mode."
    )
    preamble: str = Field("", description="Text put before the child's task.")
    model: str | None = Field(None, description="`provider/model` the child uses.")
    isolation: Literal["shared", "worktree"] = Field("shared", description="Shared workspace or a worktree.")


@dataclass(frozen=True)
class Contribution:
    """A plugin's servers, agent types and hooks, already deduplicated against the config."""

    servers: dict[str, McpServerSettings]
    agent_types: list[PluginAgentType]
    hooks: list[HookSpec]
    warnings: list[str]


def _toml(path: Path, what: str, warnings: list[str]) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        warnings.append(f"{what} {path}: skipped ({exc})")
        return {}


def _tables(
    plugin: LoadedPlugin, kind: str, key: str, warnings: list[str]
) -> Iterable[tuple[str, dict[str, Any], Path]]:
    for rel in getattr(plugin.manifest, kind):
        path = plugin.audit.paths[(kind, rel)]
        data = _toml(path, f"plugin {plugin.name}:", warnings)
        tables = data.get(key, {})
        if not isinstance(tables, dict):
            warnings.append(f"plugin {plugin.name}: {rel}: `{key}` is not a table; skipped")
            continue
        for name, table in tables.items():
            if not isinstance(table, dict):
                warnings.append(f"plugin {plugin.name}: {rel}: [{key}.{name}] is not a table; skipped")
                continue
            yield str(name), table, path


def plugin_server(plugin: LoadedPlugin, name: str, table: dict[str, Any]) -> McpServerSettings:
    """`[servers.NAME]` as a server config: a `./` command (and a relative `cwd`) resolves inside
    the plugin directory, refused if it leads out; the server starts in the plugin directory."""
    server = McpServerSettings.model_validate(table)
    update: dict[str, Any] = {}
    if server.command is not None and server.command.startswith("./"):
        update["command"] = str(contained(plugin.root, server.command, f"server {name} command"))
    if server.cwd is None:
        update["cwd"] = str(plugin.root)
    elif not Path(server.cwd).is_absolute():
        update["cwd"] = str(contained(plugin.root, server.cwd, f"server {name} cwd"))
    return server.model_copy(update=update)


def contributions(
    plugins: list[LoadedPlugin],
    *,
    configured_servers: Mapping[str, McpServerSettings],
    configured_types: Iterable[str] = (),
) -> Contribution:
    warnings: list[str] = []
    servers: dict[str, McpServerSettings] = {}
    owners: dict[str, str] = {}
    types: list[PluginAgentType] = []
    taken_types = set(configured_types)
    type_owner: dict[str, str] = {}
    hooks: list[HookSpec] = []
    for plugin in plugins:
        for name, table, _path in _tables(plugin, "mcp", "servers", warnings):
            if name in configured_servers:
                warnings.append(
                    f"plugin {plugin.name}: MCP server {name!r} is also in your config; yours wins"
                )
                continue
            if name in servers:
                warnings.append(
                    f"plugin {plugin.name}: MCP server {name!r} is also in plugin {owners[name]}; that one wins"
                )
                continue
            try:
                servers[name] = plugin_server(plugin, name, table)
                owners[name] = plugin.name
            except (ValidationError, PluginError) as exc:
                reason = (
                    exc.errors(include_url=False)[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
                )
                warnings.append(f"plugin {plugin.name}: MCP server {name!r} skipped: {reason}")
        for name, table, _path in _tables(plugin, "agents", "types", warnings):
            if not NAME_RE.fullmatch(name):
                warnings.append(
                    f"plugin {plugin.name}: agent type {name!r} skipped: the name must be [a-z0-9-]+"
                )
                continue
            if name in taken_types:
                warnings.append(
                    f"plugin {plugin.name}: agent type {name!r} is also in your config; yours wins"
                )
                continue
            if name in type_owner:
                warnings.append(
                    f"plugin {plugin.name}: agent type {name!r} is also in plugin {type_owner[name]}; that one wins"
                )
                continue
            try:
                types.append(PluginAgentType.model_validate({**table, "name": name, "plugin": plugin.name}))
                type_owner[name] = plugin.name
            except ValidationError as exc:
                err = exc.errors(include_url=False)[0]
                where = ".".join(str(p) for p in err["loc"])
                warnings.append(f"plugin {plugin.name}: agent type {name!r} skipped: {where}: {err['msg']}")
        for rel in plugin.manifest.hooks:
            path = plugin.audit.paths[("hooks", rel)]
            hooks.append(
                HookSpec(
                    command=shlex.quote(str(path)),
                    name=plugin.name,
                    cwd=plugin.root,
                    timeout=OBSERVER_TIMEOUT,
                )
            )
    return Contribution(servers, types, hooks, warnings)
