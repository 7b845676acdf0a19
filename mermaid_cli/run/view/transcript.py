"""`mermaid sessions show ID` at a terminal: the saved conversation rendered with `rich`, one block
per message (who spoke, tool calls with their arguments, tool results, errors in red). The plain
form (cli/sessions.py) stays the format for pipes and `--plain`."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.text import Text

from mermaid_cli.core.types import Message, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from mermaid_cli.tools.termtext import clean_text

RESULT_CHARS = 500  # as much of a tool result as the plain transcript shows
_ROLE_STYLE = {"user": "bold blue", "assistant": "bold green", "system": "bold magenta"}


def render_transcript(
    console: Console,
    session_id: str,
    model: str | None,
    messages: Sequence[Message],
    *,
    redact: Callable[[str], str] = lambda text: text,
) -> None:
    """Print the conversation on `console`."""

    def clean(text: str) -> str:
        return clean_text(redact(text))

    title = Text()
    title.append(f"session {clean(session_id)}", style="bold")
    if model:
        title.append(f"  {clean(str(model))}", style="cyan")
    console.print(title)
    for msg in messages:
        blocks = [b for b in (_block(msg.role, block, clean) for block in msg.content) if b is not None]
        if not blocks:
            continue
        console.print(
            Rule(Text(msg.role, style=_ROLE_STYLE.get(msg.role, "bold")), align="left", style="dim")
        )
        console.print(Padding(Group(*blocks), (0, 0, 0, 2)))


def _block(role: str, block: object, clean: Callable[[str], str]) -> RenderableType | None:
    if isinstance(block, ToolCallBlock):
        text = Text()
        text.append("tool call ", style="dim")
        text.append(clean(block.name), style="bold yellow")
        text.append(" " + clean(_arguments(block.arguments)))
        return text
    if isinstance(block, ToolResultBlock):
        content = clean(block.content)
        cut = len(content) > RESULT_CHARS
        text = Text()
        text.append(
            "tool result" + (" (error)" if block.is_error else "") + "\n",
            style="red" if block.is_error else "dim",
        )
        text.append(content[:RESULT_CHARS], style="red" if block.is_error else "")
        if cut:
            text.append(f"\n… {len(content) - RESULT_CHARS} more characters", style="dim")
        return text
    if isinstance(block, ReasoningBlock) and block.text:
        return Text(clean(block.text), style="dim italic")
    if isinstance(block, TextBlock) and block.text:
        return Text(clean(block.text))
    return None


def _arguments(arguments: Any) -> str:
    try:
        return json.dumps(arguments, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(arguments)
