"""The input half of the `computer` tool: one mouse or keyboard action performed on a
`screen.Screen`, in a worker thread, with the modifier keys held around it. Returns where the
action left the pointer (the tool compares it with the pointer before the next action, to notice
that the user moved the mouse).
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from mermaid_cli.tools.computer.actions import CLICKS, ComputerAction


class MouseState(Protocol):
    """What `perform` records of the run's state (`tool.ComputerState`)."""

    mouse_down: bool


def perform(
    screen: Any,
    state: MouseState,
    action: ComputerAction,
    target: tuple[int, int] | None,
    start: tuple[int, int] | None,
    keys: list[str],
    modifiers: list[str],
) -> tuple[int, int]:
    """The input itself, in a worker thread; returns where it left the pointer."""
    name = action.action
    if name in CLICKS:
        button, count = CLICKS[name]
        if target is not None:
            screen.move(*target)
        with _held(screen, modifiers):
            screen.click(button, count)
    elif name == "mouse_move":
        assert target is not None
        screen.move(*target)
    elif name == "left_click_drag":
        assert target is not None and start is not None
        screen.move(*start)
        screen.press("left")
        try:
            steps = 8
            for i in range(1, steps + 1):
                screen.move(
                    round(start[0] + (target[0] - start[0]) * i / steps),
                    round(start[1] + (target[1] - start[1]) * i / steps),
                )
                time.sleep(0.01)
        finally:
            screen.release("left")
    elif name == "left_mouse_down":
        if target is not None:
            screen.move(*target)
        screen.press("left")
        state.mouse_down = True
    elif name == "left_mouse_up":
        if target is not None:
            screen.move(*target)
        screen.release("left")
        state.mouse_down = False
    elif name == "scroll":
        if target is not None:
            screen.move(*target)
        amount = action.scroll_amount or 3
        dx, dy = {"up": (0, amount), "down": (0, -amount), "left": (-amount, 0), "right": (amount, 0)}[
            action.scroll_direction or "down"
        ]
        with _held(screen, modifiers):
            screen.scroll(dx, dy)
    elif name == "type":
        screen.type_text(action.text or "")
    elif name == "key":
        with _held(screen, keys[:-1]):
            screen.key_down(keys[-1])
            screen.key_up(keys[-1])
    elif name == "hold_key":
        with _held(screen, keys):
            time.sleep(action.duration if action.duration is not None else 1.0)
    else:  # pragma: no cover - the Action literal is closed
        raise ValueError(f"unknown action {name}")
    return screen.pointer()


class _held:
    """Press `keys` in order on enter and release them in reverse on exit."""

    def __init__(self, screen: Any, keys: list[str]) -> None:
        self.screen, self.keys = screen, keys
        self.down: list[str] = []

    def __enter__(self) -> None:
        for key in self.keys:
            self.screen.key_down(key)
            self.down.append(key)

    def __exit__(self, *exc: object) -> None:
        for key in reversed(self.down):
            self.screen.key_up(key)
