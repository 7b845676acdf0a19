"""ask_user_question at a real pseudo-terminal, and its refusal headless."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest

from mermaid_cli.tools.ask_user import AskUserQuestion, AskUserQuestionArgs, interpret
from mermaid_cli.tools.base import ToolContext


@pytest.fixture
def pty_pair():
    master, slave = os.openpty()
    yield master, os.ttyname(slave)
    os.close(master)
    os.close(slave)


async def ask(tty: str, out: io.StringIO, tmp_path: Path, **arguments: Any):
    tool = AskUserQuestion(tty_path=tty, out=out)
    ctx = ToolContext(project_root=tmp_path, interactive=True)
    return await tool.run(AskUserQuestionArgs(**arguments), ctx)


async def test_pick_an_option_at_a_tty(pty_pair, tmp_path):
    master, tty = pty_pair
    os.write(master, b"2\n")
    out = io.StringIO()
    result = await ask(tty, out, tmp_path, question="Which database?", options=["sqlite", "postgres"])
    assert result.content == "The user chose: postgres"
    assert "? Which database?\n  1. sqlite\n  2. postgres\n" in out.getvalue()


async def test_free_text_and_retry_at_a_tty(pty_pair, tmp_path):
    master, tty = pty_pair
    os.write(master, b"\n7\nuse mysql\n")
    out = io.StringIO()
    result = await ask(tty, out, tmp_path, question="Which database?", options=["sqlite", "postgres"])
    assert result.content == "The user answered: use mysql"
    assert out.getvalue().count("not understood") == 2


async def test_no_answer_after_three_tries(pty_pair, tmp_path):
    master, tty = pty_pair
    os.write(master, b"\n\n\n")
    result = await ask(tty, io.StringIO(), tmp_path, question="Name?")
    assert not result.is_error and "no answer" in result.content and "assumption" in result.content


async def test_headless_is_refused_without_reading(tmp_path):
    tool = AskUserQuestion(tty_path=str(tmp_path / "no-such-tty"))
    result = await tool.run(AskUserQuestionArgs(question="?"), ToolContext(project_root=tmp_path))
    assert result.is_error and "Nobody can answer" in result.content


async def test_missing_terminal_is_an_error_result(tmp_path):
    tool = AskUserQuestion(tty_path=str(tmp_path / "no-such-tty"), out=io.StringIO())
    ctx = ToolContext(project_root=tmp_path, interactive=True)
    result = await tool.run(AskUserQuestionArgs(question="?"), ctx)
    assert result.is_error and "could not read the terminal" in result.content


def test_interpret():
    single = AskUserQuestionArgs(question="q", options=["a", "b", "c"])
    multi = AskUserQuestionArgs(question="q", options=["a", "b", "c"], multiple=True)
    assert interpret("3", single) == "The user chose: c"
    assert interpret("1,3", single) is None
    assert interpret("1, 3 3", multi) == "The user chose: a; c"
    assert interpret("0", multi) is None
    assert interpret("  ", single) is None
    assert interpret("42", AskUserQuestionArgs(question="How many?")) == "The user answered: 42"
