"""The computer tool without a screen: the scaling math (property tests), the action rules on a
fake screen, and the gate's one decision per model message for input actions."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from mermaid_cli.core.types import ToolCallBlock
from mermaid_cli.tools.base import ToolContext
from mermaid_cli.tools.computer.actions import ComputerArgs
from mermaid_cli.tools.computer.geometry import MAX_LONG_EDGE, MAX_PIXELS, Geometry, fit
from mermaid_cli.tools.computer.tool import EARLIER_FAILED, Computer

sizes = st.tuples(st.integers(1, 8000), st.integers(1, 8000))


@given(sizes)
def test_fit_stays_within_both_limits_and_never_enlarges(size):
    w, h = fit(*size)
    assert 1 <= w <= size[0] and 1 <= h <= size[1]
    assert max(w, h) <= MAX_LONG_EDGE
    assert w * h <= MAX_PIXELS or (w == 1 or h == 1)
    if max(size) <= MAX_LONG_EDGE and size[0] * size[1] <= MAX_PIXELS:
        assert (w, h) == size


@given(st.tuples(st.integers(200, 8000), st.integers(200, 8000)))
def test_fit_keeps_the_aspect_ratio_and_uses_the_room(size):
    w, h = fit(*size)
    assert abs(w / h - size[0] / size[1]) <= (size[0] / size[1]) * (1.5 / min(w, h))
    # one pixel more on the long edge would break a limit (or the screen's own size)
    grow = (
        (w + 1, round((w + 1) * size[1] / size[0])) if w >= h else (round((h + 1) * size[0] / size[1]), h + 1)
    )
    assert (
        max(grow) > MAX_LONG_EDGE or grow[0] * grow[1] > MAX_PIXELS or grow[0] > size[0] or grow[1] > size[1]
    )


def test_fit_of_common_screens():
    assert fit(1920, 1080) == (1430, 804)
    assert fit(1280, 800) == (1280, 800)
    assert fit(3840, 2160) == (1430, 804)
    assert fit(1024, 768) == (1024, 768)


@given(sizes, st.data())
def test_screenshot_points_map_back_onto_the_screen_and_round_trip(size, data):
    g = Geometry.for_screen(*size)
    x = data.draw(st.integers(0, g.shot_width - 1))
    y = data.draw(st.integers(0, g.shot_height - 1))
    sx, sy = g.to_screen(x, y)
    assert 0 <= sx < size[0] and 0 <= sy < size[1]
    # the screen pixel lies inside the block the screenshot pixel covers
    assert math.floor(x * g.scale_x) <= sx < math.ceil((x + 1) * g.scale_x)
    assert math.floor(y * g.scale_y) <= sy < math.ceil((y + 1) * g.scale_y)
    assert g.to_shot(sx, sy) == (x, y)


@given(sizes, st.data())
def test_regions_cover_what_the_screenshot_showed(size, data):
    g = Geometry.for_screen(*size)
    x1, x2 = data.draw(st.integers(0, g.shot_width)), data.draw(st.integers(0, g.shot_width))
    y1, y2 = data.draw(st.integers(0, g.shot_height)), data.draw(st.integers(0, g.shot_height))
    left, top, right, bottom = g.region_to_screen(x1, y1, x2, y2)
    assert 0 <= left < right <= size[0] and 0 <= top < bottom <= size[1]
    assert left <= min(x1, x2) * g.scale_x + 1e-9


class FakeScreen:
    """Records what the tool sends; `user_moves` shifts the pointer as a person would."""

    def __init__(self, size=(1920, 1080)) -> None:
        self.size = size
        self.pos = (960, 540)
        self.log: list[tuple] = []

    def grab(self, region, out_size):
        self.log.append(("grab", region, out_size))
        return b"\x89PNG fake"

    def pointer(self):
        return self.pos

    def move(self, x, y):
        self.pos = (x, y)
        self.log.append(("move", x, y))

    def press(self, button):
        self.log.append(("press", button))

    def release(self, button):
        self.log.append(("release", button))

    def click(self, button, count):
        self.log.append(("click", button, count, self.pos))

    def scroll(self, dx, dy):
        self.log.append(("scroll", dx, dy))

    def type_text(self, text):
        self.log.append(("type", text))

    def key_down(self, key):
        self.log.append(("down", key))

    def key_up(self, key):
        self.log.append(("up", key))


def make_tool(screen: FakeScreen) -> Computer:
    async def no_sleep(_seconds: float) -> None:
        return None

    return Computer(screen.size, lambda: screen, settle=0, sleep=no_sleep)


def run(tool: Computer, ctx: ToolContext, **args):
    return asyncio.run(tool.run(ComputerArgs(**args), ctx))


def test_a_failed_action_stops_the_rest_of_its_message_only(tmp_path):
    screen = FakeScreen()
    tool, ctx = make_tool(screen), ToolContext(project_root=tmp_path)
    ctx.message_seq = 1
    bad = run(tool, ctx, action="left_click", coordinate=[5000, 10])
    assert bad.is_error and "outside the 1430x804 screenshot" in bad.content
    assert run(tool, ctx, action="screenshot").content == EARLIER_FAILED
    assert not any(entry[0] == "click" for entry in screen.log)
    ctx.message_seq = 2
    ok = run(tool, ctx, action="left_click", coordinate=[100, 100])
    assert not ok.is_error
    assert screen.log[-1] == ("click", "left", 1, Geometry.for_screen(1920, 1080).to_screen(100, 100))


def test_modifiers_keys_and_scroll_reach_the_screen(tmp_path):
    screen = FakeScreen()
    tool, ctx = make_tool(screen), ToolContext(project_root=tmp_path)
    run(tool, ctx, action="left_click", coordinate=[10, 10], text="shift")
    run(tool, ctx, action="key", text="ctrl+s")
    run(tool, ctx, action="scroll", coordinate=[10, 10], scroll_direction="down", scroll_amount=2)
    run(tool, ctx, action="triple_click", coordinate=[10, 10])
    kinds = [e for e in screen.log if e[0] in ("down", "up", "click", "scroll")]
    at = Geometry.for_screen(1920, 1080).to_screen(10, 10)
    assert at == (14, 14)
    assert kinds == [
        ("down", "shift"),
        ("click", "left", 1, at),
        ("up", "shift"),
        ("down", "ctrl"),
        ("down", "s"),
        ("up", "s"),
        ("up", "ctrl"),
        ("scroll", 0, -2),
        ("click", "left", 3, at),
    ]
    bad = run(tool, ctx, action="key", text="ctrl+NoSuchKey")
    assert bad.is_error and "unknown key" in bad.content


def test_a_batch_runs_in_order_stops_at_the_first_failure_and_ends_with_a_screenshot(tmp_path):
    screen = FakeScreen()
    tool, ctx = make_tool(screen), ToolContext(project_root=tmp_path)
    result = run(
        tool,
        ctx,
        action="screenshot",
        actions=[
            {"action": "left_click", "coordinate": [10, 10]},
            {"action": "mouse_move"},
            {"action": "type", "text": "never"},
        ],
    )
    assert result.is_error and "action 2 (mouse_move) failed" in result.content
    assert "1 later action(s) not executed" in result.content and len(result.images) == 1
    assert not any(e[0] == "type" for e in screen.log) and screen.log[-1][0] == "grab"
    fine = run(tool, ctx, action="screenshot", actions=[{"action": "type", "text": "hi"}])
    assert not fine.is_error and fine.images and ("type", "hi") in screen.log


def test_the_user_moving_the_mouse_stops_input_but_not_screenshots(tmp_path):
    screen = FakeScreen()
    tool, ctx = make_tool(screen), ToolContext(project_root=tmp_path)
    assert not run(tool, ctx, action="mouse_move", coordinate=[100, 100]).is_error
    screen.pos = (1, 2)  # the user
    stopped = run(tool, ctx, action="left_click", coordinate=[100, 100])
    assert stopped.is_error and stopped.content.startswith("Not executed: the user moved the mouse")
    assert not run(tool, ctx, action="screenshot").is_error
    screen.pos = tool.state.pointer or (0, 0)  # even back where it was: input stays stopped
    assert run(tool, ctx, action="type", text="x").content.startswith(
        "Not executed: the user moved the mouse"
    )


def test_categories_and_the_batch_summary():
    tool = make_tool(FakeScreen())
    for action in ("screenshot", "zoom", "cursor_position", "wait"):
        assert tool.category_for({"action": action}) == "read"
    assert tool.category_for({"action": "left_click", "coordinate": [1, 2]}) == "computer"
    assert (
        tool.category_for({"action": "screenshot", "actions": [{"action": "type", "text": "x"}]})
        == "computer"
    )
    summary = tool.batch_summary(
        [
            {"action": "left_click", "coordinate": [1, 2]},
            {"action": "screenshot"},
            {
                "action": "screenshot",
                "actions": [{"action": "type", "text": "hi"}],
                "warnings": ["malicious page"],
            },
        ]
    )
    assert summary == "computer: left_click at (1, 2); type 'hi' | provider safety warning: malicious page"


def test_the_schema_hides_the_native_batch_fields():
    spec = make_tool(FakeScreen()).spec()
    assert set(spec.input_schema["properties"]) >= {"action", "coordinate", "text", "region"}
    assert (
        "actions" not in spec.input_schema["properties"] and "warnings" not in spec.input_schema["properties"]
    )
    assert spec.display == (1430, 804) and "1430x804" in spec.description


# -- the gate ---------------------------------------------------------------------------------


def _gate(mode: str, *, approver=None, reviewer=None, interactive=False):
    from mermaid_cli.config.loader import Settings
    from mermaid_cli.policy.gate import PolicyGate

    settings = Settings()
    settings.safety.mode = mode
    events: list = []
    gate = PolicyGate(
        settings=settings,
        project_root=Path("/tmp"),
        emit=events.append,
        interactive=interactive,
        approver=approver,
        reviewer=reviewer,
    )
    return gate, events


def _calls(*actions: dict) -> list[ToolCallBlock]:
    return [ToolCallBlock(id=f"c{i}", name="computer", arguments=a) for i, a in enumerate(actions)]


async def _check_all(gate, tool, calls):
    gate.begin_message(calls)
    out = []
    for i, call in enumerate(calls):
        out.append(await gate.check(f"tool#{i}", tool, ComputerArgs(**call.arguments), call))
    return out


def test_ask_shows_the_whole_batch_in_one_prompt():
    prompts: list[str] = []

    async def approver(tool: str, prompt: str, reason: str) -> str:
        prompts.append(prompt)
        return "once"

    gate, events = _gate("ask", approver=approver, interactive=True)
    tool = make_tool(FakeScreen())
    calls = _calls(
        {"action": "screenshot"},
        {"action": "left_click", "coordinate": [10, 20]},
        {"action": "type", "text": "hello"},
    )
    results = asyncio.run(_check_all(gate, tool, calls))
    assert [r.decision.verdict for r in results] == ["allow", "allow", "allow"]
    assert results[0].decision.by == "mode" and results[2].decision.by == "user"
    assert prompts == ["computer: computer: left_click at (10, 20); type 'hello'"]
    assert sum(1 for e in events if type(e).__name__ == "ApprovalRequired") == 1


def test_read_only_denies_input_and_allows_looking():
    gate, _ = _gate("read_only")
    tool = make_tool(FakeScreen())
    shot, click = asyncio.run(
        _check_all(
            gate, tool, _calls({"action": "screenshot"}, {"action": "left_click", "coordinate": [1, 1]})
        )
    )
    assert shot.decision.verdict == "allow"
    assert click.decision.verdict == "deny" and not click.blocked and "read-only" in (click.message or "")


def test_headless_ask_blocks_input_unless_untrusted_tools_are_allowed():
    gate, _ = _gate("ask")
    tool = make_tool(FakeScreen())
    (blocked,) = asyncio.run(_check_all(gate, tool, _calls({"action": "key", "text": "Return"})))
    assert blocked.blocked and "--allow-untrusted-tools" in (blocked.message or "")
    gate.allow_untrusted = True
    (allowed,) = asyncio.run(_check_all(gate, tool, _calls({"action": "key", "text": "Return"})))
    assert allowed.decision.verdict == "allow" and allowed.decision.by == "headless"


def test_auto_gives_the_reviewer_the_batch_and_the_last_screenshot():
    from mermaid_cli.core.types import ImageBlock, ImageData, ModelTurn, TextBlock

    seen: list = []

    class Reviewer:
        async def turn(self, request, sink):
            seen.append(request)
            return ModelTurn(content=(TextBlock(text="ALLOW"),), stop_reason="stop")

    gate, _ = _gate("auto", reviewer=Reviewer())
    tool = make_tool(FakeScreen())
    tool.state.last_screenshot = ImageData(media_type="image/png", data="QUJD")
    calls = _calls({"action": "left_click", "coordinate": [3, 4]}, {"action": "type", "text": "abc"})
    results = asyncio.run(_check_all(gate, tool, calls))
    assert [(r.decision.verdict, r.decision.by) for r in results] == [("allow", "classifier")] * 2
    (request,) = seen  # one review for the whole message
    text = request.messages[0].text
    assert "left_click at (3, 4); type 'abc'" in text
    images = [b for b in request.messages[0].content if isinstance(b, ImageBlock)]
    assert images and images[0].image.data == "QUJD"


def test_the_tool_is_absent_with_its_reason_when_off_or_without_a_screen():
    from mermaid_cli.config.loader import Settings
    from mermaid_cli.tools.catalog_computer import OFF, computer_tools

    off, on = Settings(), Settings()
    on.tools.computer = True
    assert computer_tools(off, {}) == ([], {"computer": OFF})
    tools, absent = computer_tools(on, {"WAYLAND_DISPLAY": "wayland-0"})
    assert tools == [] and "Wayland" in absent["computer"]
    tools, absent = computer_tools(on, {})
    assert tools == [] and "DISPLAY is not set" in absent["computer"]


def test_a_project_config_cannot_turn_the_tool_on(tmp_path, isolated_env):
    from mermaid_cli.config.loader import load_settings

    project = tmp_path / "p"
    (project / ".mermaid").mkdir(parents=True)
    (project / ".mermaid/config.toml").write_text("[tools]\ncomputer = true\n")
    loaded = load_settings(project_root=project)
    assert loaded.settings.tools.computer is False
    assert any("`tools.computer = true` is ignored in a project config" in w for w in loaded.warnings)
    user = isolated_env / "config" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("[tools]\ncomputer = true\n")
    (project / ".mermaid/config.toml").write_text("[tools]\ncomputer = false\n")  # turning it off is fine
    assert load_settings(project_root=project).settings.tools.computer is False
    (project / ".mermaid/config.toml").unlink()
    assert load_settings(project_root=project).settings.tools.computer is True


def test_the_tool_registry_is_not_taken_from_the_spec_cache_when_the_tool_is_on(tmp_path):
    from mermaid_cli.config.loader import Settings
    from mermaid_cli.run.assemble import cached_registry
    from mermaid_cli.tools import spec_cache

    env = {"MERMAID_DATA_DIR": str(tmp_path / "data"), "WAYLAND_DISPLAY": "wayland-0"}
    on = Settings()
    on.tools.computer = True
    first = cached_registry(on, env, interactive=False)
    second = cached_registry(on, env, interactive=False)
    assert not isinstance(second, spec_cache.CachedRegistry)
    assert "Wayland" in first.absent["computer"] and "Wayland" in second.absent["computer"]
    assert not (tmp_path / "data" / "cache" / "tool-specs").exists() or not any(
        (tmp_path / "data" / "cache" / "tool-specs").iterdir()
    )


def test_doctor_reports_the_screen():
    from mermaid_cli.config.loader import Settings
    from mermaid_cli.tools.catalog_computer import computer_status

    on = Settings()
    on.tools.computer = True
    usable, line = computer_status(Settings(), {})  # off: no screen is only worth a note
    assert usable and "DISPLAY is not set" in line and "the tool is off" in line
    usable, line = computer_status(on, {})
    assert not usable and line.startswith("computer: ") and "DISPLAY" in line


def test_help_does_not_import_the_screen_stack():
    import subprocess
    import sys

    code = (
        "import sys, runpy; sys.argv=['mermaid','--help']\n"
        "try:\n runpy.run_module('mermaid_cli', run_name='__main__')\n"
        "except SystemExit: pass\n"
        "bad=[m for m in ('mss','pynput','PIL','Xlib','mermaid_cli.tools.computer') if m in sys.modules]\n"
        "print('LOADED', bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "LOADED []" in out.stdout, out.stdout + out.stderr
