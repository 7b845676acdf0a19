"""The approval prompt of the terminal view: what the call will do (a coloured diff for file edits
and patches, the command with its risk class, the resolved path of an outside access) and why it
asks (the rule or mode), then one key: `1` yes, `2` yes and don't ask again (this session), `3`
or Esc no. Same `Approver` signature as the plain prompt (`policy.gate.Approver`); the rest of
what it shows comes from the `approval_required` and `tool_started` events the view saw."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from mermaid_cli.core import events as ev
from mermaid_cli.run.view.diffs import FilePreview, preview
from mermaid_cli.run.view.keys import discard_typeahead, read_answer

if TYPE_CHECKING:
    from mermaid_cli.run.view.terminal import PendingApproval, TerminalView

CHOICES = "  1) yes   2) yes, don't ask again this session   3) no  [Esc = no]: "
ANSWER_TEXT = {"once": "yes", "always": "yes, and not again this session", "no": "no"}
_LINE_STYLE = {"+": "green", "-": "red", "@": "cyan", " ": "", "!": "yellow"}
#: rows an approval needs besides the diff (title, risk, reason, headers, the choices)
_CHROME_ROWS = 10


class RichApprover:
    """An `Approver`: `await approver(tool, prompt, reason)` -> "once", "always" or "no"."""

    def __init__(self, view: TerminalView) -> None:
        self.view = view

    async def __call__(self, tool: str, prompt: str, reason: str) -> str:
        view = self.view
        pending, started = view.take_pending(tool, prompt)
        if view.hung_up:
            return "no"
        stop = threading.Event()
        with view.prompting():
            discard_typeahead(view.stdin)
            view.console.print(approval_view(view, tool, prompt, reason, pending, started))
            view.console.print(Text(CHOICES, style="bold"), end="")
            try:
                answer = await asyncio.get_running_loop().run_in_executor(
                    None, read_answer, view.stdin, lambda: stop.is_set() or view.hung_up
                )
            except asyncio.CancelledError:
                stop.set()  # the reader thread sees it within a poll and gives the terminal back
                view.console.print()
                raise
            style = "green" if answer != "no" else "yellow"
            view.console.print(Text(ANSWER_TEXT[answer], style=style))
        return answer


def approval_view(
    view: TerminalView,
    tool: str,
    prompt: str,
    reason: str,
    pending: PendingApproval | None,
    started: ev.ToolStarted | None,
) -> RenderableType:
    """The panel above the choices. Every string passes the view's `clean` (redacted)."""
    clean = view.clean
    arguments = started.arguments if started is not None else None
    command = (arguments or {}).get("command")
    shown = isinstance(command, str) and bool(command)
    # a command is shown whole below: the title need not repeat it
    title = f"mermaid wants to run {clean(tool)}" if shown else f"mermaid wants to run {clean(prompt)}"
    rows: list[RenderableType] = [Text(title, style="bold")]
    facts = Text()
    if pending is not None:
        facts.append("risk ", style="dim")
        facts.append(clean(pending.risk), style="bold yellow")
        facts.append("   ")
    facts.append("asked by ", style="dim")
    facts.append(clean(reason))
    rows.append(facts)
    if isinstance(command, str) and command:
        rows.append(_command(clean(command), _budget(view)))
    for target in (started.targets or []) if started is not None else []:
        if not _inside(Path(target.path), view.root):
            rows.append(
                Text(f"outside the project: {clean(target.path)} ({target.operation})", style="bold red")
            )
    previews = preview(tool, arguments, view.root)
    if previews:
        rows.extend(_diffs(view, previews))
    return Panel(Group(*rows), title="approval", title_align="left", border_style="yellow", expand=True)


def _command(command: str, budget: int) -> Text:
    lines = command.splitlines() or [""]
    text = Text(no_wrap=False)
    for i, line in enumerate(lines[:budget]):
        text.append(("$ " if i == 0 else "  ") + line + "\n", style="bold")
    if len(lines) > budget:
        text.append(f"  … {len(lines) - budget} more lines\n", style="dim")
    text.rstrip()
    return text


def _diffs(view: TerminalView, previews: list[FilePreview]) -> list[RenderableType]:
    """The files' diffs, clipped together to what fits the screen under the prompt."""
    budget = _budget(view)
    out: list[RenderableType] = []
    for item in previews:
        header = Text()
        header.append(view.clean(item.path), style="bold")
        header.append(f" +{item.added}", style="green")
        header.append(f" -{item.removed}", style="red")
        if item.note:
            header.append(f"  ({view.clean(item.note)})", style="dim")
        out.append(header)
        shown = item.lines[: max(budget, 0)]
        budget -= len(shown)
        for kind, line in shown:
            mark = "" if kind == "@" else kind if kind != " " else " "
            out.append(
                Text(mark + view.clean(line), style=_LINE_STYLE[kind], no_wrap=True, overflow="ellipsis")
            )
        if len(shown) < len(item.lines):
            out.append(Text(f"… {len(item.lines) - len(shown)} more diff lines not shown", style="dim"))
    return out


def _budget(view: TerminalView) -> int:
    return max(view.console.height - _CHROME_ROWS, 4)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        resolved = os.path.realpath(root)
        return str(path).startswith(resolved.rstrip(os.sep) + os.sep) or str(path) == resolved
    return True
