"""The terminal view's renderables, pure functions of what the run reported: the live status line,
one line per finished tool call, notes, and the closing summary table. Every string they are
given was already redacted and cleaned by the view (terminal.py); they never take rich markup
from data (a `[red]` in a file name stays text)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from mermaid_cli.core import events as ev

STATUS_STYLE = {
    "success": "bold green",
    "failed": "bold red",
    "provider_error": "bold red",
    "internal_error": "bold red",
    "usage_error": "bold red",
    "blocked": "bold yellow",
    "limit": "bold yellow",
    "timeout": "bold yellow",
    "interrupted": "bold yellow",
}


@dataclass(frozen=True)
class Marks:
    """The glyphs of the view; ASCII when the terminal's encoding cannot show the others."""

    ok: str = "✓"
    fail: str = "✗"
    denied: str = "⊘"
    dot: str = "·"
    running: str = "↳"

    @classmethod
    def for_encoding(cls, encoding: str) -> Marks:
        if encoding.lower().replace("-", "").startswith("utf"):
            return cls()
        return cls(ok="ok", fail="x", denied="-", dot="|", running=">")


@dataclass
class RunningTool:
    """A tool call the terminal view shows as running."""

    name: str
    brief: str
    started: float
    last_output: str = ""


@dataclass
class RunState:
    """What the status line shows, updated from the run's events."""

    model: str = ""
    started: float | None = None
    turns: int = 0
    tokens: int = 0
    cost: float | None = None
    #: "starting", "model", "thinking", "writing", "between" (a turn ended), "tools", "asking", "done"
    phase: str = "starting"
    phase_since: float = 0.0
    running: dict[str, RunningTool] = field(default_factory=dict)
    tasks: tuple[int, int] | None = None


_PHASES = {
    "starting": "starting",
    "model": "waiting for the model",
    "thinking": "the model is thinking",
    "writing": "the model is writing",
    "between": "the model answered",
    "tools": "running tools",
    "asking": "waiting for your answer",
    "done": "done",
}


def status_text(state: RunState, now: float, marks: Marks) -> Text:
    """`claude-sonnet-4-5 · turn 2 · 0:12 · 1,234 tokens · $0.0123 · waiting for the model 5s`."""
    working = state.phase in ("starting", "model", "thinking", "writing")
    turn = state.turns + (1 if working and state.phase != "starting" else 0)
    parts: list[tuple[str, str]] = [
        (state.model or "model", "bold cyan"),
        (f"turn {max(turn, 1)}", ""),
        (clock(now - state.started) if state.started is not None else "0:00", ""),
        (f"{state.tokens:,} tokens", ""),
        (money(state.cost), ""),
    ]
    phase = _PHASES.get(state.phase, state.phase)
    if state.phase in ("model", "thinking", "writing", "asking"):
        phase += f" {int(max(now - state.phase_since, 0))}s"
    parts.append((phase, "yellow" if state.phase == "asking" else "dim"))
    if state.tasks is not None:
        parts.append((f"tasks {state.tasks[0]}/{state.tasks[1]}", ""))
    text = Text(no_wrap=True, overflow="ellipsis")
    for i, (part, style) in enumerate(parts):
        if i:
            text.append(f" {marks.dot} ", style="dim")
        text.append(part, style=style)
    return text


def running_lines(state: RunState, now: float, marks: Marks) -> list[Text]:
    """One line per tool call still running, under the status line."""
    out = []
    for call_id, tool in state.running.items():
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"  {marks.running} {call_id} ", style="dim")
        line.append(tool.name, style="bold")
        line.append(f" {seconds(now - tool.started)}", style="dim")
        if tool.brief:
            line.append(f" {tool.brief}")
        out.append(line)
        if tool.last_output:  # its own line: a long command must not hide it
            out.append(Text(f"    | {tool.last_output}", style="dim", no_wrap=True, overflow="ellipsis"))
    return out


def tool_line(event: ev.ToolFinished, brief: str, marks: Marks) -> RenderableType:
    """`✓ tool#1 read_file  src/users.py   0.1s`, and the error under a failed or denied call."""
    decision = event.decision
    denied = decision is not None and decision.verdict == "deny"
    if denied:
        mark, style = marks.denied, "yellow"
    elif event.status == "success":
        mark, style = marks.ok, "green"
    else:
        mark, style = marks.fail, "red"
    grid = Table.grid(padding=(0, 1), expand=True)
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
    grid.add_column(no_wrap=True, justify="right")
    head = Text()
    head.append(mark, style=style)
    head.append(f" {event.call_id}", style="dim")
    detail = Text(brief)
    if event.status == "success" and not denied and event.summary:
        detail.append(f"  {event.summary}", style="dim")
    grid.add_row(
        head, Text(event.name, style="bold"), detail, Text(seconds(event.duration_ms / 1000), style="dim")
    )
    if not denied and event.status == "success":
        return grid
    if denied and decision is not None:
        who = "blocked (nobody can answer)" if decision.by == "headless" else f"denied by {decision.by}"
        why = Text(f"    {who}: {decision.reason or ''}".rstrip(": "), style=style)
    else:
        why = Text(f"    {first_line(event.error or event.summary)}", style=style)
    why.no_wrap, why.overflow = True, "ellipsis"
    return Group(grid, why)


def note_text(line: str) -> Text:
    """A line the run reported (a warning, an error, a retry, the session id)."""
    style = "dim"
    if line.startswith("error:") or " error: " in line[:40]:
        style = "red"
    elif line.startswith(("retrying:", "warning:")):
        style = "yellow"
    return Text(line, style=style)


def narration(text: str) -> Text:
    return Text(text.strip("\n"), style="italic")


def summary_table(result: ev.Result, marks: Marks) -> Table:
    """The closing table: status, exit code, turns, tokens, cost, files changed, blocked calls."""
    table = Table(
        box=box.ROUNDED,
        show_header=False,
        title="run summary",
        title_justify="left",
        title_style="bold",
        expand=False,
    )
    table.add_column(style="dim", no_wrap=True)
    table.add_column(overflow="fold")
    table.add_row("status", Text(result.status, style=STATUS_STYLE.get(result.status, "bold")))
    table.add_row("exit code", str(result.exit_code))
    table.add_row("turns", str(result.num_turns))
    usage = result.usage
    table.add_row(
        "tokens", f"{result.total_tokens:,} ({usage.input_tokens:,} in, {usage.output_tokens:,} out)"
    )
    table.add_row("cost", money(result.cost_usd, unknown="n/a"))
    table.add_row("duration", seconds(result.duration_ms / 1000))
    calls = f"{result.tool_calls}" + (f" ({result.tool_errors} failed)" if result.tool_errors else "")
    table.add_row("tool calls", calls)
    table.add_row("files changed", _listing(result.files_changed))
    blocked = [f"{b.get('call_id', '')} {b.get('tool', '')}: {b.get('reason', '')}" for b in result.blocked]
    table.add_row("blocked calls", Text(_listing(blocked), style="yellow" if blocked else ""))
    reasons = [str(b.get("reason", "")) for b in result.blocked]
    errors = [e for e in result.errors if not _said(e, reasons)]
    for error in errors[:5]:
        line = first_line(error)
        table.add_row("error", Text(line[:200] + ("…" if len(line) > 200 else ""), style="red"))
    table.add_row("session", result.session_id or "(none)")
    return table


def _said(error: str, reasons: list[str]) -> bool:
    """A blocked call's error (`tool: reason`, maybe cut) repeats what the blocked row says."""
    tail = error.split(": ", 1)[-1].strip()
    return any(r and (r in error or (tail and r.startswith(tail))) for r in reasons)


def _listing(items: list[str], limit: int = 10) -> str:
    if not items:
        return "none"
    shown = "\n".join(items[:limit])
    return shown + (f"\n… and {len(items) - limit} more" if len(items) > limit else "")


def brief(arguments: dict[str, Any] | None) -> str:
    """The argument a person recognises a call by (its command, path, URL or query)."""
    if not arguments:
        return ""
    for key in ("command", "path", "url", "query", "pattern", "subject"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return first_line(value)[:200]
    return ""


def first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]


def clock(secs: float) -> str:
    secs = int(max(secs, 0))
    return (
        f"{secs // 3600}:{secs // 60 % 60:02d}:{secs % 60:02d}"
        if secs >= 3600
        else f"{secs // 60}:{secs % 60:02d}"
    )


def seconds(secs: float) -> str:
    if secs < 60:
        return f"{secs:.1f}s"
    return f"{int(secs // 60)}m {int(secs % 60):02d}s"


def money(cost: float | None, unknown: str = "cost n/a") -> str:
    return unknown if cost is None else f"${cost:.4f}"
