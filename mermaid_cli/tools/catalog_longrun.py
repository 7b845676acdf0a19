"""The long-run tools of a run: the task checklist, the context pair, the scratchpad, memory and
questions."""

from __future__ import annotations

from mermaid_cli.tools.ask_user import AskUserQuestion
from mermaid_cli.tools.base import Tool
from mermaid_cli.tools.context import CompactContext, ContextArchive
from mermaid_cli.tools.context_check import ContextCheck
from mermaid_cli.tools.memory import Memory
from mermaid_cli.tools.scratchpad import scratchpad_tools
from mermaid_cli.tools.tasks import TaskCreate, TaskList, TaskUpdate


def longrun_tools(*, interactive: bool, memory_enabled: bool) -> list[Tool]:
    """`ask_user_question` only with a person at a TTY (a headless question would hang the run);
    `memory` unless `[memory] enabled = false`."""
    tools: list[Tool] = [
        TaskCreate(),
        TaskUpdate(),
        TaskList(),
        ContextArchive(),
        CompactContext(),
        ContextCheck(),
    ]
    tools += scratchpad_tools()
    if memory_enabled:
        tools.append(Memory())
    if interactive:
        tools.append(AskUserQuestion())
    return tools
