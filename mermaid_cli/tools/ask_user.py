"""ask_user_question: ask the person at the terminal.

Offered only when a person is at a TTY (`interactive_only`): a question nobody can answer must never
hang a CI run, so headless the tool is absent and the system prompt tells the model to decide and
state its assumption. The question goes to stderr (stdout carries only the payload) and the answer
is read from the terminal itself, not stdin, which may be the piped prompt.
"""

from __future__ import annotations

import asyncio
import re
import sys
from typing import ClassVar, TextIO

from pydantic import Field

from mermaid_cli.core.types import ToolResult
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext

_MAX_TRIES = 3
_NO_ANSWER = "The user gave no answer. Decide yourself, state your assumption, and go on."


class AskUserQuestionArgs(ToolArgs):
    question: str = Field(min_length=1, max_length=2000, description="The question, complete and specific.")
    options: list[str] | None = Field(
        default=None,
        max_length=10,
        description="Choices to pick from; the user may also type another answer.",
    )
    multiple: bool = Field(default=False, description="Allow picking several options.")


def render_question(args: AskUserQuestionArgs) -> str:
    lines = ["", f"? {args.question}"]
    for i, option in enumerate(args.options or [], start=1):
        lines.append(f"  {i}. {option}")
    if args.options:
        how = "numbers separated by commas" if args.multiple else "a number"
        lines.append(f"  (type {how}, or your own answer)")
    return "\n".join(lines) + "\n> "


def interpret(raw: str, args: AskUserQuestionArgs) -> str | None:
    """The answer for the model, or None when the input is not usable (asked again)."""
    text = raw.strip()
    if not text:
        return None
    options = args.options or []
    if options and re.fullmatch(r"\d+(\s*[, ]\s*\d+)*", text):
        numbers = [int(n) for n in re.findall(r"\d+", text)]
        if any(n < 1 or n > len(options) for n in numbers):
            return None
        if len(numbers) > 1 and not args.multiple:
            return None
        picked = list(dict.fromkeys(options[n - 1] for n in numbers))
        if args.multiple:
            return "The user chose: " + "; ".join(picked)
        return f"The user chose: {picked[0]}"
    return f"The user answered: {text}"


class AskUserQuestion(Tool):
    name = "ask_user_question"
    description = (
        "Ask the person at the terminal a question, with options to pick from or free text. Use it only "
        "when a decision really needs them."
    )
    Args = AskUserQuestionArgs
    category = "session"
    #: never offered in a headless run (the catalog leaves it out)
    interactive_only: ClassVar[bool] = True

    def __init__(self, tty_path: str = "/dev/tty", out: TextIO | None = None) -> None:
        self._tty_path = tty_path
        self._out = out

    async def run(self, args: AskUserQuestionArgs, ctx: ToolContext) -> ToolResult:
        if not ctx.interactive:
            return ToolResult.error("Nobody can answer questions in this run. " + _NO_ANSWER)
        try:
            answer = await asyncio.to_thread(self._ask, args)
        except OSError as exc:
            return ToolResult.error(f"could not read the terminal ({exc}). {_NO_ANSWER}")
        if answer is None:
            return ToolResult(content=_NO_ANSWER, summary="No answer")
        return ToolResult(content=answer, summary=answer[:200])

    def _ask(self, args: AskUserQuestionArgs) -> str | None:
        out = self._out if self._out is not None else sys.stderr
        with open(self._tty_path, encoding="utf-8", errors="replace") as tty:
            prompt = render_question(args)
            for _ in range(_MAX_TRIES):
                out.write(prompt)
                out.flush()
                line = tty.readline()
                if not line:  # EOF: the terminal went away
                    return None
                answer = interpret(line, args)
                if answer is not None:
                    return answer
                prompt = "  (not understood; try again)\n> "
        return None
