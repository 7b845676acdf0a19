"""The `computer` tool: screenshots of the real screen and its mouse and keyboard.

Owns the action vocabulary (Anthropic's computer toolset), the per-run state that makes a run's
input safe to stop (the last screenshot, where the pointer was left, "the user moved the mouse"),
and the rule that a failed action stops the rest of its model message. The screen itself is a
`screen.Screen` (X11 in production, a fake in unit tests), built on first use.

Policy: `screenshot`, `zoom`, `cursor_position` and `wait` are reads (category `read`); every
other action is category `computer` (external access: `read_only` blocks it). `batch_summary`
lets the gate decide once for all input actions of one model message, and `review_images` hands
the auto reviewer the last screenshot.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from mermaid_cli.core.types import ImageData, ToolResult, ToolSpec
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext, schema_of
from mermaid_cli.tools.computer.geometry import Geometry

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
#: input actions wait this long before they return, so the screen has reacted
SETTLE_SECONDS = 0.5
MAX_WAIT_SECONDS = 100.0
MAX_BATCH = 50
EARLIER_FAILED = "Not executed: an earlier computer action in this turn failed."
USER_MOVED = "Not executed: the user moved the mouse"
USER_MOVED_DETAIL = (
    f"{USER_MOVED} (the pointer is not where the last action left it), so input is stopped for the "
    "rest of this run. Screenshots still work; tell the user what you were about to do."
)


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


@dataclass
class ComputerState:
    """What one run remembers between computer calls."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: where the last action left the pointer (screen pixels); None before the first look
    pointer: tuple[int, int] | None = None
    #: set once the user moved the mouse: input stays stopped for the run
    stopped: bool = False
    #: the model message whose computer action failed (its later actions do not run)
    failed_message: int = 0
    last_screenshot: ImageData | None = None
    mouse_down: bool = False


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


class Computer(Tool):
    name = "computer"
    description = (
        "See and drive the user's screen: take a screenshot, then click, type and press keys. "
        "Coordinates are pixels of the last screenshot. Take a screenshot first and after actions "
        "whose effect you need to check. Calls in one message run in order; after one fails the rest "
        "do not run."
    )
    Args: ClassVar[type[ComputerArgs]] = ComputerArgs
    category = "computer"
    #: calls of one model message run one after another, in order (see agent._run_calls)
    sequential: ClassVar[bool] = True

    def __init__(
        self,
        size: tuple[int, int],
        screen_factory: Callable[[], Any],
        *,
        settle: float = SETTLE_SECONDS,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.geometry = Geometry.for_screen(*size)
        self._factory = screen_factory
        self._screen: Any = None
        self.settle = settle
        self._sleep = sleep
        self.state = ComputerState()

    # -- what the model and the gate see ------------------------------------------------------
    def spec(self) -> ToolSpec:
        g = self.geometry
        return ToolSpec(
            name=self.name,
            description=f"{self.description} Screenshots are {g.shot_width}x{g.shot_height} pixels.",
            input_schema=schema_of(ComputerArgs),
            display=(g.shot_width, g.shot_height),
        )

    def category_for(self, arguments: dict[str, Any]) -> str:
        return "computer" if is_input(arguments) else "read"

    def batch_summary(self, calls: Sequence[dict[str, Any]]) -> str:
        """The input actions of one model message (and any provider warning), for one decision."""
        labels = [
            action_label(a) for args in calls for a in actions_of(args) if a.get("action") not in VIEW_ACTIONS
        ]
        warnings = [str(w) for args in calls for w in (args.get("warnings") or [])]
        text = "computer: " + "; ".join(labels or ["(no input)"])
        if warnings:
            text += " | provider safety warning: " + "; ".join(warnings)
        return text

    def review_images(self) -> tuple[ImageData, ...]:
        shot = self.state.last_screenshot
        return (shot,) if shot is not None else ()

    def close(self) -> None:
        screen, self._screen = self._screen, None
        if screen is not None and hasattr(screen, "close"):
            screen.close()

    # -- running ------------------------------------------------------------------------------
    async def run(self, args: ComputerArgs, ctx: ToolContext) -> ToolResult:
        state = self.state
        message = ctx.message_seq  # 0: not called from a model message (no stop-the-rest rule)
        if message and state.failed_message == message:
            return ToolResult.error(EARLIER_FAILED)
        async with state.lock:
            result = await self._run_call(args, ctx)
        if result.is_error and message:
            state.failed_message = message
        return result

    async def _run_call(self, args: ComputerArgs, ctx: ToolContext) -> ToolResult:
        try:
            if self._screen is None:
                self._screen = await asyncio.to_thread(self._factory)
                ctx.cleanups.append(self.close)
        except Exception as exc:  # noqa: BLE001 - an unusable screen is the model's error to read
            return ToolResult.error(f"computer: the screen cannot be used: {type(exc).__name__}: {exc}")
        if not args.actions:
            return await self._one(args)
        done: list[str] = []
        for index, action in enumerate(args.actions, 1):
            result = await self._one(action)
            if result.is_error:
                rest = len(args.actions) - index
                shot = await self._one(ComputerAction(action="screenshot"))
                note = f"action {index} ({action_label(action)}) failed: {result.content}"
                if rest:
                    note += f"\n{rest} later action(s) not executed."
                return ToolResult(
                    content="\n".join([*done, note]),
                    is_error=True,
                    summary=note.splitlines()[0][:200],
                    images=shot.images,
                )
            done.append(result.content)
        shot = await self._one(args)
        return shot.model_copy(update={"content": "\n".join([*done, shot.content])})

    async def _one(self, action: ComputerAction) -> ToolResult:
        name = action.action
        try:
            problem = _missing(action)
            if problem:
                return ToolResult.error(f"computer {name}: {problem}")
            if name == "screenshot":
                return await self._screenshot()
            if name == "zoom":
                return await self._zoom(action)
            if name == "cursor_position":
                return await self._cursor()
            if name == "wait":
                seconds = action.duration if action.duration is not None else 1.0
                await self._sleep(seconds)
                return ToolResult(content=f"waited {seconds:g}s", summary=f"waited {seconds:g}s")
            return await self._input(action)
        except ValueError as exc:
            return ToolResult.error(f"computer {name}: {exc}")
        except Exception as exc:  # noqa: BLE001 - X errors become results, never exceptions
            return ToolResult.error(f"computer {name} failed: {type(exc).__name__}: {exc}")

    async def _screenshot(self) -> ToolResult:
        g = self.geometry
        png = await asyncio.to_thread(self._screen.grab, None, (g.shot_width, g.shot_height))
        await self._observe()
        image = ImageData(media_type="image/png", data=base64.b64encode(png).decode("ascii"))
        self.state.last_screenshot = image
        note = f"[image/png, {g.shot_width}x{g.shot_height}, {len(png)} bytes] screenshot"
        if (g.shot_width, g.shot_height) != (g.screen_width, g.screen_height):
            note += f" of the {g.screen_width}x{g.screen_height} screen"
        return ToolResult(content=note, summary=note, images=(image,))

    async def _zoom(self, action: ComputerAction) -> ToolResult:
        g = self.geometry
        x1, y1, x2, y2 = action.region or (0, 0, g.shot_width, g.shot_height)
        for x, y in ((x1, y1), (x2 - 1 if x2 > x1 else x2, y2 - 1 if y2 > y1 else y2)):
            if not (0 <= x <= g.shot_width and 0 <= y <= g.shot_height):
                raise ValueError(
                    f"region {action.region} is outside the {g.shot_width}x{g.shot_height} screenshot"
                )
        box = g.region_to_screen(x1, y1, x2, y2)
        from mermaid_cli.tools.computer.geometry import fit

        out = fit(box[2] - box[0], box[3] - box[1])
        png = await asyncio.to_thread(self._screen.grab, box, out)
        image = ImageData(media_type="image/png", data=base64.b64encode(png).decode("ascii"))
        note = (
            f"[image/png, {out[0]}x{out[1]}, {len(png)} bytes] zoom of screenshot region "
            f"({x1}, {y1})-({x2}, {y2}); coordinates stay those of the full screenshot"
        )
        return ToolResult(content=note, summary=note, images=(image,))

    async def _cursor(self) -> ToolResult:
        x, y = await asyncio.to_thread(self._screen.pointer)
        await self._observe((x, y))
        sx, sy = self.geometry.to_shot(x, y)
        return ToolResult(content=f"X={sx},Y={sy}", summary=f"cursor at ({sx}, {sy})")

    async def _observe(self, where: tuple[int, int] | None = None) -> None:
        """Learn where the pointer is, the first time only (later, input actions keep it)."""
        if self.state.pointer is None:
            self.state.pointer = where or await asyncio.to_thread(self._screen.pointer)

    def _point(self, coordinate: list[int] | None) -> tuple[int, int] | None:
        if coordinate is None:
            return None
        x, y = coordinate
        g = self.geometry
        if not g.in_shot(x, y):
            raise ValueError(
                f"({x}, {y}) is outside the {g.shot_width}x{g.shot_height} screenshot "
                f"(x 0-{g.shot_width - 1}, y 0-{g.shot_height - 1})"
            )
        return g.to_screen(x, y)

    async def _input(self, action: ComputerAction) -> ToolResult:
        state, screen = self.state, self._screen
        if state.stopped:
            return ToolResult.error(USER_MOVED_DETAIL)
        target = self._point(action.coordinate)
        start = self._point(action.start_coordinate)
        keys = _keys(action) if action.action in ("key", "hold_key") else []
        modifiers = _modifiers(action.text) if action.action in (*CLICKS, "scroll") else []
        now = await asyncio.to_thread(screen.pointer)
        if state.pointer is not None and now != state.pointer:
            state.stopped = True
            return ToolResult.error(USER_MOVED_DETAIL)
        # where this action left the pointer, read at once: a move during the settle is the user's
        state.pointer = await asyncio.to_thread(self._perform, action, target, start, keys, modifiers)
        await self._sleep(self.settle)
        text = action_label(action)
        return ToolResult(content=f"done: {text}", summary=text)

    def _perform(
        self,
        action: ComputerAction,
        target: tuple[int, int] | None,
        start: tuple[int, int] | None,
        keys: list[str],
        modifiers: list[str],
    ) -> tuple[int, int]:
        """The input itself, in a worker thread; returns where it left the pointer."""
        screen, name = self._screen, action.action
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
            self.state.mouse_down = True
        elif name == "left_mouse_up":
            if target is not None:
                screen.move(*target)
            screen.release("left")
            self.state.mouse_down = False
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


def _missing(action: ComputerAction) -> str | None:
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


def _keys(action: ComputerAction) -> list[str]:
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


def _modifiers(text: str | None) -> list[str]:
    from mermaid_cli.tools.computer.screen import known_key, split_combo

    keys = split_combo(text or "")
    unknown = [k for k in keys if not known_key(k)]
    if unknown:
        raise ValueError(f"unknown modifier key(s) {', '.join(map(repr, unknown))}")
    return keys
