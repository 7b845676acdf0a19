"""The lazily loaded command table of the `mermaid` group.

Every command group except `exec`/`run` lives in its own module, named here with its short help, so
`mermaid --help` lists them all without importing any of them and a command's module (and what it
imports) is loaded only when that command runs or prints its own help. Importing this module
costs only click.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

import click


class LazyCommand(NamedTuple):
    """Where a subcommand lives and the one-line help `mermaid --help` shows for it."""

    module: str
    attr: str
    short_help: str


COMMANDS: dict[str, LazyCommand] = {
    "add": LazyCommand(
        "mermaid_cli.cli.mcp", "add_cmd", "Add an MCP server (the same as `mermaid mcp add`)."
    ),
    "batch": LazyCommand(
        "mermaid_cli.cli.batch",
        "batch_group",
        "Run many tasks: locally with --jobs, or sharded for a CI matrix.",
    ),
    "checkpoints": LazyCommand(
        "mermaid_cli.cli.checkpoints",
        "checkpoints_command",
        "List the file checkpoints taken before mutations.",
    ),
    "config": LazyCommand("mermaid_cli.cli.config", "config_group", "Inspect the effective configuration."),
    "doctor": LazyCommand(
        "mermaid_cli.cli.doctor",
        "doctor_command",
        "Check that a run would work here: config, model, key, MCP.",
    ),
    "login": LazyCommand(
        "mermaid_cli.cli.providers", "login_command", "Store a provider API key in the OS keyring."
    ),
    "logout": LazyCommand(
        "mermaid_cli.cli.providers", "logout_command", "Remove a provider API key from the OS keyring."
    ),
    "mcp": LazyCommand(
        "mermaid_cli.cli.mcp", "mcp_group", "Manage MCP servers (add, remove, list, known, login)."
    ),
    "plugin": LazyCommand("mermaid_cli.cli.plugin", "plugin_group", "Install, enable and audit plugins."),
    "report": LazyCommand(
        "mermaid_cli.cli.report", "report_command", "Draw a run or a batch as Markdown (gantt) or HTML."
    ),
    "restore": LazyCommand(
        "mermaid_cli.cli.checkpoints", "restore_command", "Put files back as a checkpoint saved them."
    ),
    "tools": LazyCommand(
        "mermaid_cli.cli.tools", "tools_group", "List every tool with its category and decision."
    ),
    "sessions": LazyCommand(
        "mermaid_cli.cli.sessions", "sessions_group", "List and inspect saved sessions of this project."
    ),
}


def load_command(name: str) -> click.Command:
    """Import the module of the table's command `name` and return its click command."""
    entry = COMMANDS[name]
    command = getattr(importlib.import_module(entry.module), entry.attr)
    if not isinstance(command, click.Command):  # a wrong table entry is a bug, not a user error
        raise TypeError(f"{entry.module}.{entry.attr} is not a click command")
    return command


class LazyGroup(click.Group):
    """A group whose table commands are imported on first use; commands defined on the group
    itself (`exec`, `run`) behave as in any click group."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in COMMANDS and name not in self.commands:
            return load_command(name)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from the table's help texts: listing imports no command module."""
        rows = [(name, entry.short_help) for name, entry in COMMANDS.items() if name not in self.commands]
        for name, command in self.commands.items():
            if not command.hidden:
                rows.append((name, command.get_short_help_str(60)))
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))
