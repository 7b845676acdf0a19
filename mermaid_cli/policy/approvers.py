"""Who answers an `ask` (DESIGN.md §4 step 7): the `Approver` signature the gate calls, and the
person at the terminal (`tty_approver`).

An approver gets (tool, prompt, reason) and answers "once", "always" (don't ask again this
session) or "no"; the gate folds the answer in with `policy.resolution.resolve_user`. A headless
run has no approver: the engine blocks its asks before one would be needed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

# answer of a person: "once", "always" (this session), or "no"
Approver = Callable[[str, str, str], Awaitable[str]]


async def tty_approver(tool: str, prompt: str, reason: str) -> str:
    """Ask the person at the terminal: 1 yes, 2 yes and don't ask again (this session), 3/Esc no."""
    import asyncio
    import sys

    text = (
        f"\nmermaid wants to run {prompt}\n  ({reason})\n"
        "  1) yes   2) yes, don't ask again this session   3) no  [Esc = no]: "
    )

    def ask() -> str:
        sys.stderr.write(text)
        sys.stderr.flush()
        line = sys.stdin.readline()
        choice = line.strip()[:1]
        return {"1": "once", "2": "always"}.get(choice, "no")

    return await asyncio.get_running_loop().run_in_executor(None, ask)
