"""The shell tools, by load group: `execute_command` does not import the background-process code."""

from __future__ import annotations

from collections.abc import Callable

from mermaid_cli.tools.base import Tool


def _command() -> list[Tool]:
    from mermaid_cli.tools.shell import ExecuteCommand

    return [ExecuteCommand()]


def _processes() -> list[Tool]:
    from mermaid_cli.tools.processes import BackgroundProcess

    return [BackgroundProcess()]


#: group name -> its tools, in the order the registry offers them
SHELL_GROUPS: dict[str, Callable[[], list[Tool]]] = {"shell": _command, "processes": _processes}


def shell_tools() -> list[Tool]:
    return [tool for load in SHELL_GROUPS.values() for tool in load()]
