"""The `computer` tool: screenshots of the real screen and its mouse and keyboard.

Owns the per-run state that makes a run's input safe to stop (the last screenshot, where the
pointer was left, "the user moved the mouse"), and the rule that a failed action stops the rest
of its model message. The screen itself is a
`screen.Screen` (X11 in production, a fake in unit tests), built on first use; the actions and
their arguments are in `actions`, the mouse and keyboard input itself in `input`.

Policy: `screenshot`, `zoom`, `cursor_position` and `wait` are reads (category `read`); every
other action is category `computer` (external access: `read_only` blocks it). `batch_summary`
lets the gate decide once for all input actions of one model message, and `review_images` hands
the auto reviewer the last screenshot.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mermaid_cli.core.types import ImageData, ToolResult, ToolSpec
from mermaid_cli.tools.base import Tool, ToolContext, schema_of
from mermaid_cli.tools.computer.actions import (
    CLICKS,
    VIEW_ACTIONS,
    ComputerAction,
    ComputerArgs,
    action_label,
    actions_of,
    is_input,
    keys_of,
    missing,
    modifiers_of,
)
from mermaid_cli.tools.computer.geometry import Geometry
from mermaid_cli.tools.computer.input import perform

#: input actions wait this long before they return, so the screen has reacted
SETTLE_SECONDS = 0.5
EARLIER_FAILED = "Not executed: an earlier computer action in this turn failed."
USER_MOVED = "Not executed: the user moved the mouse"
USER_MOVED_DETAIL = (
    f"{USER_MOVED} (the pointer is not where the last action left it), so input is stopped for the "
    "rest of this run. Screenshots still work; tell the user what you were about to do."
)


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
            problem = missing(action)
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
        keys = keys_of(action) if action.action in ("key", "hold_key") else []
        modifiers = modifiers_of(action.text) if action.action in (*CLICKS, "scroll") else []
        now = await asyncio.to_thread(screen.pointer)
        if state.pointer is not None and now != state.pointer:
            state.stopped = True
            return ToolResult.error(USER_MOVED_DETAIL)
        # where this action left the pointer, read at once: a move during the settle is the user's
        state.pointer = await asyncio.to_thread(
            perform, screen, state, action, target, start, keys, modifiers
        )
        await self._sleep(self.settle)
        text = action_label(action)
        return ToolResult(content=f"done: {text}", summary=text)
