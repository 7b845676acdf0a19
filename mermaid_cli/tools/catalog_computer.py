"""Whether a run offers the `computer` tool (`[tools] computer = true`) and, when it cannot, why.

Only this module's functions import the screen stack (`mss`, `pynput`, `pillow`), and only when
the setting is on: `mermaid --help` and runs without the tool never load them.
"""

from __future__ import annotations

from collections.abc import Mapping

from mermaid_cli.config.loader import Settings
from mermaid_cli.tools.base import Tool

OFF = (
    "the computer tool is off for this run; the user can enable it with `[tools] computer = true` "
    "(every screenshot is sent to the model's provider)"
)


def computer_enabled(settings: Settings) -> bool:
    return settings.tools.computer


def computer_tools(settings: Settings, env: Mapping[str, str]) -> tuple[list[Tool], dict[str, str]]:
    """([the computer tool] or [], {name: reason it is absent})."""
    if not computer_enabled(settings):
        return [], {"computer": OFF}
    from mermaid_cli.tools.computer.screen import X11Screen, primary_size, screen_problem

    problem = screen_problem(env)
    if problem is not None:
        return [], {"computer": problem}
    from mermaid_cli.tools.computer.tool import Computer

    display = env["DISPLAY"].strip()
    return [Computer(primary_size(display), lambda: X11Screen(display))], {}


def computer_status(settings: Settings, env: Mapping[str, str]) -> tuple[bool, str]:
    """(ok, one line) for `mermaid doctor`: is a screen usable for the computer tool here?"""
    from mermaid_cli.tools.computer.screen import primary_size, screen_problem

    problem = screen_problem(env)
    on = computer_enabled(settings)
    if problem is not None:
        return (not on), (
            f"computer: {problem}" + ("" if on else " (the tool is off: [tools] computer = false)")
        )
    width, height = primary_size(env["DISPLAY"].strip())
    state = "on" if on else "off ([tools] computer = true enables it)"
    return True, f"computer: X11 screen {env['DISPLAY'].strip()} is {width}x{height}; the tool is {state}"
