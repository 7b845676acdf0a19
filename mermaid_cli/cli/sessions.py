"""`mermaid sessions list|show`: read the saved sessions of a project (never writes them)."""

from __future__ import annotations

import sys

import click


@click.group("sessions")
def sessions_group() -> None:
    """List and inspect saved sessions of this project."""


@sessions_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("-p", "--path", "path", default=".", metavar="DIR", help="Project directory.")
def sessions_list(as_json: bool, path: str) -> None:
    """List sessions, oldest first."""
    import dataclasses
    import json
    from pathlib import Path

    from mermaid_cli.store.sessions import list_sessions

    rows = list_sessions(Path(path).resolve())
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(r) for r in rows], indent=2))
        return
    if not rows:
        click.echo("no sessions", err=True)
        return
    for r in rows:
        click.echo(f"{r.session_id}  {r.updated_at}  {r.messages:4d} msgs  {r.model}  {r.title}")


@sessions_group.command("show")
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="Print the messages as JSON.")
@click.option("--plain", is_flag=True, help="Plain lines, even at a terminal.")
@click.option("-p", "--path", "path", default=".", metavar="DIR", help="Project directory.")
@click.option("--agent", "agent_id", metavar="aN", help="Show that subagent's conversation instead.")
def sessions_show(session_id: str, as_json: bool, plain: bool, path: str, agent_id: str | None) -> None:
    """Show the conversation of SESSION_ID (rendered with colours at a terminal); `--agent aN`
    shows one of its subagents' conversations (their ids are listed at the end)."""
    import json
    from pathlib import Path

    from mermaid_cli.core.errors import UsageError
    from mermaid_cli.store.sessions import child_sessions, load_session

    try:
        data = load_session(Path(path).resolve(), session_id, agent_id)
        children = [] if agent_id else child_sessions(Path(path).resolve(), session_id)
    except UsageError as exc:
        click.echo(f"mermaid: {exc.message}", err=True)
        sys.exit(2)
    for bad in data.bad_lines:
        click.echo(f"mermaid: skipped unreadable line {bad}", err=True)
    if as_json:
        payload = {
            "session_id": data.session_id,
            "model": data.started.get("model"),
            "messages": [m.model_dump(mode="json", exclude_none=True) for m in data.messages],
            "state": data.state,
            "bad_lines": data.bad_lines,
            "subagents": children,
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    if _terminal(plain):
        import os

        from mermaid_cli.run.view.console import terminal_console
        from mermaid_cli.run.view.transcript import render_transcript

        console, _stream = terminal_console(sys.stdout, os.environ)
        render_transcript(console, data.session_id, data.started.get("model"), data.messages)
        if children:
            click.echo(f"subagents: {', '.join(children)} (mermaid sessions show {session_id} --agent ID)")
        return
    for msg in data.messages:
        for block in msg.content:
            line = _block_line(msg.role, block)
            if line is not None:
                click.echo(line)
    if children:
        click.echo(f"subagents: {', '.join(children)} (mermaid sessions show {session_id} --agent ID)")


def _terminal(plain: bool) -> bool:
    """The rich transcript: stdout is a terminal that takes colours, and --plain is not given."""
    import os

    from mermaid_cli.run.output import view_wanted

    try:
        is_tty = sys.stdout.isatty()
    except (ValueError, OSError):
        is_tty = False
    return view_wanted(is_tty, os.environ, plain=plain)


def _block_line(role: str, block: object) -> str | None:
    """One transcript line for a content block (None for an empty text block)."""
    import json

    from mermaid_cli.core.types import ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock

    if isinstance(block, ToolCallBlock):
        return f"[{role}] tool call {block.name} {json.dumps(block.arguments)}"
    if isinstance(block, ToolResultBlock):
        flag = " (error)" if block.is_error else ""
        return f"[tool result{flag}] {block.content[:500]}"
    if isinstance(block, TextBlock | ReasoningBlock) and block.text:
        return f"[{role}] {block.text}"
    return None
