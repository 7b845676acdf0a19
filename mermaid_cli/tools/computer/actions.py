"""The action vocabulary of the `computer` tool (Anthropic's computer toolset, what Claude is
trained on): the arguments one call carries, the one-line label of an action for prompts and
logs, which actions only look (`VIEW_ACTIONS`: the policy category `read`) and what an action
lacks or names wrongly (checked before anything reaches the screen). Pure: no screen, no I/O.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from mermaid_cli.tools.base import ToolArgs

Action = Literal[
    "screenshot",
    "zoom",
    "cursor_position",
    "left_click",
    "right_click",
    "middle_click",
    "double_click",
    "triple_click",
    "left_click_drag",
    "mouse_move",
    "left_mouse_down",
    "left_mouse_up",
    "scroll",
    "type",
    "key",
    "hold_key",
    "wait",
]
#: actions that only look (or wait): they run in every safety mode
VIEW_ACTIONS = frozenset({"screenshot", "zoom", "cursor_position", "wait"})
CLICKS: dict[str, tuple[str, int]] = {
    "left_click": ("left", 1),
    "right_click": ("right", 1),
    "middle_click": ("middle", 1),
    "double_click": ("left", 2),
    "triple_click": ("left", 3),
}
MAX_WAIT_SECONDS = 100.0
MAX_BATCH = 50


class ComputerAction(ToolArgs):
    # One action, in the shape of Anthropic's computer tool (what Claude is trained on).

    action: Action = Field(description="What to do.")
    coordinate: list[int] | None = Field(
        None,
        min_length=2,
        max_length=2,
        description="[x, y] in pixels of the last screenshot: where to click, move, scroll or end a drag.",
    )
    start_coordinate: list[int] | None = Field(
        None, min_length=2, max_length=2, description="left_click_drag: [x, y] where the drag starts."
    )
    text: str | None = Field(
        None,
        description=(
            "type: the text. key/hold_key: a key or combination in xdotool names (Return, ctrl+s, "
            "alt+Tab). Clicks and scroll: modifier keys held meanwhile (shift, ctrl+alt)."
        ),
    )
    scroll_direction: Literal["up", "down", "left", "right"] | None = Field(
        None, description="scroll: which way."
    )
    scroll_amount: int | None = Field(
        None, ge=1, le=50, description="scroll: how many wheel clicks (default 3)."
    )
    duration: float | None = Field(
        None, ge=0, le=MAX_WAIT_SECONDS, description="wait/hold_key: seconds (default 1)."
    )
    region: list[int] | None = Field(
        None,
        min_length=4,
        max_length=4,
        description="zoom: [x1, y1, x2, y2] in pixels of the last screenshot, shown at full resolution.",
    )


class ComputerArgs(ComputerAction):
    # `actions` and `warnings` are not offered to the model (no docstring: it would be the schema's
    # description). A provider-native call carrying several actions (OpenAI's `computer`) becomes
    # `actions` (run in order, stopping at the first failure) then `action` (a screenshot), with
    # the provider's safety warnings in `warnings` for the gate to show.

    actions: SkipJsonSchema[list[ComputerAction] | None] = Field(None, max_length=MAX_BATCH)
    warnings: SkipJsonSchema[list[str] | None] = None


def action_label(action: ComputerAction | dict[str, Any]) -> str:
    """`left_click (512, 300)`, `type 'hello'`, `key ctrl+s`: one action for prompts and logs."""
    data = action if isinstance(action, dict) else action.model_dump(exclude_none=True)
    name = str(data.get("action", "?"))
    parts = [name]
    if data.get("start_coordinate"):
        parts.append(f"from {tuple(data['start_coordinate'])}")
    if data.get("coordinate"):
        parts.append(("to " if name == "left_click_drag" else "at ") + str(tuple(data["coordinate"])))
    if data.get("region"):
        parts.append(f"region {tuple(data['region'])}")
    if data.get("scroll_direction"):
        parts.append(f"{data['scroll_direction']} x{data.get('scroll_amount') or 3}")
    text = data.get("text")
    if isinstance(text, str) and text:
        if name == "type":
            parts.append(repr(text[:200] + ("…" if len(text) > 200 else "")))
        elif name in ("key", "hold_key"):
            parts.append(text)
        else:
            parts.append(f"holding {text}")
    if data.get("duration") is not None and name in ("wait", "hold_key"):
        parts.append(f"{data['duration']}s")
    return " ".join(parts)


def actions_of(arguments: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every action one call's arguments carry, in the order they run."""
    args = arguments or {}
    out = [a for a in args.get("actions") or [] if isinstance(a, dict)]
    if args.get("action") is not None:
        out.append({k: v for k, v in args.items() if k not in ("actions", "warnings")})
    return out


def is_input(arguments: dict[str, Any] | None) -> bool:
    return any(a.get("action") not in VIEW_ACTIONS for a in actions_of(arguments))


def missing(action: ComputerAction) -> str | None:
    """What an action lacks (checked before anything is sent to the screen)."""
    name = action.action
    if name == "left_click_drag" and (action.coordinate is None or action.start_coordinate is None):
        return "needs start_coordinate and coordinate"
    if name == "mouse_move" and action.coordinate is None:
        return "needs coordinate"
    if name == "scroll" and action.scroll_direction is None:
        return "needs scroll_direction (up, down, left or right)"
    if name in ("type", "key", "hold_key") and not action.text:
        return "needs text"
    if name == "zoom" and action.region is None:
        return "needs region [x1, y1, x2, y2]"
    return None


def keys_of(action: ComputerAction) -> list[str]:
    from mermaid_cli.tools.computer.screen import known_key, split_combo

    keys = split_combo(action.text or "")
    if not keys:
        raise ValueError("needs a key name in text")
    unknown = [k for k in keys if not known_key(k)]
    if unknown:
        raise ValueError(
            f"unknown key name(s) {', '.join(map(repr, unknown))}; use xdotool names such as Return or ctrl+s"
        )
    return keys


def modifiers_of(text: str | None) -> list[str]:
    from mermaid_cli.tools.computer.screen import known_key, split_combo

    keys = split_combo(text or "")
    unknown = [k for k in keys if not known_key(k)]
    if unknown:
        raise ValueError(f"unknown modifier key(s) {', '.join(map(repr, unknown))}")
    return keys
