"""The terminal view (run/view/) rendered through rich's recording console: a scripted run, an
approval with a diff, a blocked call, a limit, a narrow terminal, redaction, and the transcript of
`sessions show`. The events come from real in-process runs of replay scripts."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

from conftest import call, run_inprocess, say, write_script
from rich.console import Console, Group

from mermaid_cli.core import events as ev
from mermaid_cli.run.view import render
from mermaid_cli.run.view.approval import RichApprover, approval_view
from mermaid_cli.run.view.terminal import TerminalView


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        self.now += 0.25
        return self.now


def recording(width: int = 100, height: int = 40) -> Console:
    return Console(
        file=io.StringIO(),
        record=True,
        width=width,
        height=height,
        force_terminal=True,
        color_system="truecolor",
    )


def view_of(console: Console, **kwargs) -> TerminalView:
    return TerminalView(console, live=False, monotonic=Clock(), **kwargs)


def run_events(project: Path, turns: list[dict], *args: str) -> list[ev._Event]:
    write_script(project / "s.jsonl", turns)
    out = run_inprocess(["--json", *args, "--model", "replay/s.jsonl", "fix users"], project)
    return [ev.parse_event(line) for line in out.stdout.splitlines() if line.strip()]


def users_project(project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "users.py").write_text(
        "def users():\n    return []\n\n\ndef admin():\n    return None\n"
    )


SCRIPT = [
    call("read_file", {"path": "src/users.py"}, "c1", text="Let me look at the users module first."),
    call(
        "edit_file",
        {
            "path": "src/users.py",
            "target_content": "    return []\n",
            "replacement_content": "    # all\n    return list(USERS)\n",
        },
        "c2",
        text="Now I return the real users.",
    ),
    say("Done: users() returns the registered users."),
]


def rendered(events: list[ev._Event], width: int = 100) -> str:
    console = recording(width)
    view = view_of(console)
    for event in events:
        view.event(event)
    return console.export_text(styles=False)


def test_scripted_run(project, snapshot):
    users_project(project)
    text = rendered(run_events(project, SCRIPT, "--safety", "full_access"))
    assert "Let me look at the users module first." in text  # narration
    assert "Done: users()" not in text  # the answer is stdout's, not printed twice
    assert "run summary" in text and "src/users.py" in text
    assert text == snapshot


def test_scripted_run_on_a_narrow_terminal(project, snapshot):
    users_project(project)
    text = rendered(run_events(project, SCRIPT, "--safety", "full_access"), width=40)
    assert all(len(line) <= 40 for line in text.splitlines())
    assert text == snapshot


def test_blocked_call(project, snapshot):
    """Headless `ask`: the edit is blocked, the summary names it, exit 3."""
    users_project(project)
    text = rendered(run_events(project, SCRIPT, "--safety", "ask"))
    assert "blocked (nobody can answer)" in text
    assert "blocked calls │ tool#2 edit_file" in text
    assert text == snapshot


def test_limit(project, snapshot):
    users_project(project)
    text = rendered(run_events(project, SCRIPT, "--safety", "full_access", "--max-turns", "1"))
    assert "│ limit" in text and "│ 4 " in text
    assert text == snapshot


def test_status_line(snapshot):
    state = render.RunState(
        model="anthropic/claude-sonnet-4-5", started=0.0, turns=2, tokens=12345, cost=0.0123
    )
    state.phase, state.phase_since = "model", 70.0
    state.running["tool#3"] = render.RunningTool("execute_command", "pytest -q", 60.0, "collected 12 items")
    console = recording(100)  # rendered as the live display renders it (not joined by print)
    console.print(Group(render.status_text(state, 75.0, render.Marks())))
    for line in render.running_lines(state, 75.0, render.Marks()):
        console.print(Group(line))
    text = console.export_text(styles=False)
    assert text.splitlines()[0] == (
        "anthropic/claude-sonnet-4-5 · turn 3 · 1:15 · 12,345 tokens · $0.0123 · waiting for the model 5s"
    )
    narrow = recording(30)
    narrow.print(Group(render.status_text(state, 75.0, render.Marks())))
    assert narrow.export_text(styles=False) == "anthropic/claude-sonnet-4-5 ·…\n"
    assert text == snapshot


def edit_events(project: Path) -> tuple[ev.ToolStarted, ev.ApprovalRequired]:
    target = str(project / "src" / "users.py")
    started = ev.ToolStarted(
        call_id="tool#2",
        name="edit_file",
        arguments={
            "path": "src/users.py",
            "target_content": "    return []\n",
            "replacement_content": "    # all\n    return list(USERS)\n",
        },
        targets=[ev.FileTargetInfo(path=target, operation="modify")],
    )
    required = ev.ApprovalRequired(
        call_id="tool#2", tool="edit_file", risk="file_mutation", prompt="edit_file: modify src/users.py"
    )
    return started, required


def session(project: Path) -> ev.SessionStarted:
    return ev.SessionStarted(cli_version="0", model="m", session_id="s", cwd=str(project))


def test_approval_with_a_diff(project, snapshot):
    users_project(project)
    started, required = edit_events(project)
    console = recording(100)
    view = view_of(console)
    for event in (session(project), started, required):
        view.event(event)
    pending, call_started = view.take_pending(required.tool, required.prompt)
    reason = "safety mode 'ask' asks before every file_mutation action"
    console.print(approval_view(view, required.tool, required.prompt, reason, pending, call_started))
    styled = console.export_text(styles=True)
    assert "\x1b[32m+    return list(USERS)" in styled  # added lines green
    assert "\x1b[31m-    return []" in styled  # removed lines red
    console.print(approval_view(view, required.tool, required.prompt, reason, pending, call_started))
    text = console.export_text(styles=False)
    assert "src/users.py +2 -1" in text and "risk file_mutation" in text and reason in text
    assert text == snapshot


def test_approval_answers_and_clips_the_diff_to_the_screen(project):
    """The approver answers from the terminal (a pipe here: a line, as the plain prompt reads);
    a long diff is clipped to the screen's height."""
    (project / "big.txt").write_text("".join(f"line {i}\n" for i in range(200)))
    console = recording(80, height=20)
    view = view_of(console, stdin=io.StringIO("2\n"))
    new = "".join(f"LINE {i}\n" for i in range(200))
    started = ev.ToolStarted(
        call_id="tool#1", name="write_file", arguments={"path": "big.txt", "content": new}
    )
    required = ev.ApprovalRequired(
        call_id="tool#1", tool="write_file", risk="file_mutation", prompt="write_file: big.txt"
    )
    for event in (session(project), started, required):
        view.event(event)
    answer = asyncio.run(RichApprover(view)("write_file", "write_file: big.txt", "mode ask"))
    text = console.export_text(styles=False)
    assert answer == "always"
    assert "big.txt +200 -200" in text
    assert "more diff lines not shown" in text
    assert len(text.splitlines()) <= 20 + 3  # the panel and the choices fit the screen
    assert "[Esc = no]: yes, and not again this session" in text


def test_outside_access_and_command(project, snapshot):
    console = recording(80)
    view = view_of(console)
    started = ev.ToolStarted(
        call_id="tool#1",
        name="read_file",
        arguments={"path": "../../etc/hosts"},
        targets=[ev.FileTargetInfo(path="/etc/hosts", operation="read")],
    )
    shell = ev.ToolStarted(
        call_id="tool#2", name="execute_command", arguments={"command": "rm -rf build\nls"}
    )
    view.event(session(project))
    for started_event, risk in ((started, "read_outside"), (shell, "shell_mutation")):
        required = ev.ApprovalRequired(
            call_id=started_event.call_id, tool=started_event.name, risk=risk, prompt="p"
        )
        view.event(started_event)
        view.event(required)
        pending, found = view.take_pending(required.tool, "p")
        console.print(approval_view(view, required.tool, "p", "rule deny-outside asks", pending, found))
    text = console.export_text(styles=False)
    assert "outside the project: /etc/hosts (read)" in text
    assert "$ rm -rf build" in text and "risk shell_mutation" in text
    assert text == snapshot


def test_secrets_are_redacted_in_everything_the_view_prints(project):
    secret = "sk-live-0123456789abcdef"
    (project / "cfg.py").write_text(f"KEY = '{secret}'\n")
    console = recording(100)
    view = view_of(console, redact=lambda text: text.replace(secret, "[REDACTED]"), stdin=io.StringIO("3\n"))
    started = ev.ToolStarted(
        call_id="tool#1",
        name="edit_file",
        arguments={"path": "cfg.py", "target_content": "KEY", "replacement_content": "API_KEY"},
    )
    required = ev.ApprovalRequired(
        call_id="tool#1", tool="edit_file", risk="file_mutation", prompt="edit_file: cfg.py"
    )
    for event in (session(project), started, required):
        view.event(event)
    assert asyncio.run(view.approver("edit_file", "edit_file: cfg.py", f"asked because {secret}")) == "no"
    view.note(f"warning: token {secret}")
    view.tool_output(f"echo {secret}")
    view.event(ev.Text(delta=f"I found {secret}."))
    view.event(ev.TurnDone(total_tokens=1))
    view.event(ev.ToolStarted(call_id="tool#2", name="x", arguments={"command": secret}))
    view.event(ev.ToolFinished(call_id="tool#2", name="x", status="error", summary="", error=f"bad {secret}"))
    view.event(ev.Error(message=f"provider said {secret}"))
    view.event(ev.Result(response="", session_id="s", errors=[secret], files_changed=[secret]))
    text = console.export_text(styles=False)
    assert "[REDACTED]" in text and "+API_KEY = '[REDACTED]'" in text
    assert secret not in text


def test_control_characters_from_a_tool_never_reach_the_terminal(project):
    console = recording(100)
    view = view_of(console)
    view.event(session(project))
    view.event(ev.ToolStarted(call_id="tool#1", name="x", arguments={"command": "a\x1b]0;pwned\x07b"}))
    view.event(
        ev.ToolFinished(call_id="tool#1", name="x", status="error", summary="", error="\x1b[2Jcleared")
    )
    text = console.export_text(styles=False)
    assert "\x1b" not in text and "cleared" in text


def test_transcript(project, snapshot):
    from mermaid_cli.core.types import Message, TextBlock, ToolCallBlock, ToolResultBlock
    from mermaid_cli.run.view.transcript import render_transcript

    messages = [
        Message(role="user", content=(TextBlock(text="fix users"),)),
        Message(
            role="assistant",
            content=(
                TextBlock(text="Looking."),
                ToolCallBlock(id="c1", name="read_file", arguments={"path": "src/users.py"}),
            ),
        ),
        Message(
            role="user",
            content=(ToolResultBlock(call_id="c1", content="[red]not markup[/red]", is_error=True),),
        ),
        Message(role="assistant", content=(TextBlock(text="Done."),)),
    ]
    console = recording(60)
    render_transcript(console, "20260102_030405_001", "anthropic/claude-sonnet-4-5", messages)
    text = console.export_text(styles=False)
    assert "[red]not markup[/red]" in text
    assert text == snapshot


def test_events_parse_back(project):
    """The view's input is the protocol itself: the jsonl a run prints renders the same."""
    users_project(project)
    events = run_events(project, SCRIPT, "--safety", "full_access")
    again = [ev.parse_event(json.dumps(e.to_dict())) for e in events]
    assert rendered(again) == rendered(events)


def test_the_console_follows_columns_and_the_terminal_size():
    """`COLUMNS` pins the width; without it the width is the terminal's, read again at each
    render (a resized window re-lays out the next frame)."""
    import fcntl
    import os
    import struct
    import termios

    from mermaid_cli.run.view.console import terminal_console

    pinned, _ = terminal_console(io.StringIO(), {"COLUMNS": "50", "TERM": "xterm"})
    assert pinned.width == 50
    master, slave = os.openpty()
    try:
        with os.fdopen(os.dup(slave), "w") as tty:
            console, _ = terminal_console(tty, {"TERM": "xterm"})
            sizes = []
            for cols in (120, 45):
                fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, cols, 0, 0))
                sizes.append(console.width)
    finally:
        os.close(master)
        os.close(slave)
    assert sizes == [120, 45]
