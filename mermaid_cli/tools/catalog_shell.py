"""The shell tools, for the registry the lead assembles."""

from __future__ import annotations

from mermaid_cli.tools.base import Tool
from mermaid_cli.tools.processes import BackgroundProcess
from mermaid_cli.tools.shell import ExecuteCommand


def shell_tools() -> list[Tool]:
    return [ExecuteCommand(), BackgroundProcess()]
