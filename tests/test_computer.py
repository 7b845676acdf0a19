"""The `computer` tool on a real X11 screen (Xvfb started by the tests): scripted runs click a
button at coordinates taken from the screenshot and type text, and the test window's log shows
exactly those events at the positions the screenshot coordinates scale back to."""

from __future__ import annotations

import base64
import io
import threading
import time
from pathlib import Path

import pytest
from computer_app import centre
from computer_helpers import RecorderApp, move_pointer, pointer, skip_reason, xvfb_display
from conftest import calls, run_inprocess, run_mermaid, say, write_script

from mermaid_cli.tools.computer.geometry import Geometry

SCREENSHOT_COPY = Path("/work/wt/computer-screenshot.png")
GEOMETRY = Geometry.for_screen(1920, 1080)

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


@pytest.fixture
def display(monkeypatch, isolated_env):
    with xvfb_display() as name:
        monkeypatch.setenv("DISPLAY", name)
        monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
        cfg = isolated_env / "config" / "config.toml"
        cfg.parent.mkdir(parents=True, exist_ok=True)
        cfg.write_text("[tools]\ncomputer = true\n")
        yield name


@pytest.fixture
def app(display, tmp_path):
    window = RecorderApp(display, tmp_path / "window.jsonl")
    yield window
    window.close()


def shot_point(name: str) -> list[int]:
    """Where the model sees the centre of widget `name` in its (scaled) screenshot."""
    return list(GEOMETRY.to_shot(*centre(name)))


def act(action: str, **fields) -> dict:
    return {"action": action, **fields}


def computer_turn(*actions: dict, prefix: str = "c") -> dict:
    return calls(*(("computer", a, f"{prefix}{i}") for i, a in enumerate(actions, 1)))


def finished(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "tool_finished"]


def test_a_scripted_run_clicks_the_button_from_its_screenshot_and_types(app, project):
    button, entry = shot_point("button"), shot_point("entry")
    script = write_script(
        project / "s.jsonl",
        [
            computer_turn(act("screenshot"), prefix="a"),
            computer_turn(
                act("left_click", coordinate=button),
                act("left_click", coordinate=entry),
                act("type", text="hello world"),
                act("key", text="Return"),
                prefix="b",
            ),
            say("clicked and typed"),
        ],
    )
    out = run_inprocess(
        ["--json", "--safety", "full_access", "--model", f"replay/{script}", "press the button"], project
    )
    assert out.code == 0, out.stderr
    started = next(e for e in out.events if e["type"] == "session_started")
    assert "computer" in started["tools"]
    results = finished(out.events)
    assert [r["status"] for r in results] == ["success"] * 5, results
    assert "1430x804" in results[0]["summary"]

    evs = app.wait_for(lambda evs: any(e["event"] == "entry" for e in evs), "the typed text")
    presses = [(e["button"], e["x"], e["y"]) for e in evs if e["event"] == "press"]
    assert presses == [(1, *GEOMETRY.to_screen(*button)), (1, *GEOMETRY.to_screen(*entry))]
    assert [e["event"] for e in evs if e["event"] in ("clicked", "entry")] == ["clicked", "entry"]
    keys = "".join(e["char"] for e in evs if e["event"] == "key" and e["keysym"] != "Return")
    assert keys == "hello world"
    assert [e["keysym"] for e in evs if e["event"] == "key"][-1] == "Return"
    assert next(e for e in evs if e["event"] == "entry")["text"] == "hello world"


def test_the_screenshot_is_fitted_and_shows_the_window(display, app, tmp_path):
    from PIL import Image

    from mermaid_cli.tools.base import ToolContext
    from mermaid_cli.tools.catalog_computer import computer_tools
    from mermaid_cli.tools.computer.actions import ComputerArgs

    class _Settings:
        class tools:  # noqa: N801 - the shape of settings.tools
            computer = True

    tools, absent = computer_tools(_Settings(), {"DISPLAY": display})
    assert not absent and tools[0].name == "computer"
    try:
        result = _run(tools[0], ComputerArgs(action="screenshot"), ToolContext(project_root=tmp_path))
    finally:
        tools[0].close()
    assert not result.is_error and len(result.images) == 1
    png = base64.b64decode(result.images[0].data)
    image = Image.open(io.BytesIO(png))
    assert image.size == (1430, 804) and image.format == "PNG"
    # the blue button is where the geometry says it is
    bx, by = GEOMETRY.to_shot(*centre("button"))
    r, g, b = image.convert("RGB").getpixel((bx, by - 30))
    assert b > 150 and r < 120, (r, g, b)
    try:
        SCREENSHOT_COPY.write_bytes(png)
    except OSError:
        pass


def _run(tool, args, ctx):
    import asyncio

    return asyncio.run(tool.run(args, ctx))


def test_the_user_moving_the_mouse_stops_input_for_the_run(display, app, project):
    button = shot_point("button")
    script = write_script(
        project / "s.jsonl",
        [
            computer_turn(act("left_click", coordinate=button), prefix="a"),
            computer_turn(act("wait", duration=2), prefix="b"),
            computer_turn(act("left_click", coordinate=button), act("screenshot"), prefix="c"),
            computer_turn(act("screenshot"), prefix="d"),
            computer_turn(act("key", text="a"), prefix="e"),
            say("the user took over"),
        ],
    )

    trouble: list[BaseException] = []

    def the_user() -> None:  # moves the mouse once Mermaid's first click has landed
        try:
            app.wait_for(lambda evs: any(e["event"] == "clicked" for e in evs), "the first click", timeout=30)
            move_pointer(display, 50, 60)
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            trouble.append(exc)

    person = threading.Thread(target=the_user, daemon=True)
    person.start()
    out = run_mermaid(
        ["exec", "--json", "--safety", "full_access", "--model", f"replay/{script}", "click twice"], project
    )
    person.join(timeout=5)
    assert not trouble, trouble
    assert out.code == 0, out.stderr
    results = finished(out.events)
    assert [r["status"] for r in results] == ["success", "success", "error", "error", "success", "error"], [
        (r["status"], r["output"]) for r in results
    ]
    assert results[2]["output"].startswith("Not executed: the user moved the mouse")
    assert results[3]["output"] == "Not executed: an earlier computer action in this turn failed."
    assert results[5]["output"].startswith("Not executed: the user moved the mouse")
    time.sleep(0.3)
    assert len(app.events("clicked")) == 1 and not app.events("key")
    assert pointer(display) == (50, 60)


def test_read_only_blocks_a_click_but_allows_a_screenshot(app, project):
    script = write_script(
        project / "s.jsonl",
        [
            computer_turn(act("screenshot"), prefix="a"),
            computer_turn(act("left_click", coordinate=shot_point("button")), prefix="b"),
            say("could not click"),
        ],
    )
    out = run_inprocess(["--json", "--safety", "read_only", "--model", f"replay/{script}", "look"], project)
    assert out.code == 0, out.stderr
    shot, click = finished(out.events)
    assert shot["status"] == "success" and "screenshot" in shot["summary"]
    assert click["status"] == "error" and click["decision"]["verdict"] == "deny"
    assert "read-only" in click["output"]
    time.sleep(0.3)
    assert not app.events("press")


def test_headless_ask_refuses_input_unless_untrusted_tools_are_allowed(app, project):
    button = shot_point("button")
    script = write_script(
        project / "s.jsonl",
        [computer_turn(act("screenshot"), act("left_click", coordinate=button)), say("done")],
    )
    args = ["exec", "--json", "--safety", "ask", "--no-interactive", "--model", f"replay/{script}", "click"]
    blocked = run_mermaid(args, project)
    assert blocked.code == 3, blocked.stderr
    assert blocked.events[-1]["blocked"][0]["tool"] == "computer"
    assert "--allow-untrusted-tools" in finished(blocked.events)[1]["output"]
    assert not app.events("press")

    allowed = run_mermaid([*args[:1], "--allow-untrusted-tools", *args[1:]], project)
    assert allowed.code == 0, allowed.stderr
    app.wait_for(lambda evs: any(e["event"] == "clicked" for e in evs), "the allowed click")


def test_without_a_display_the_tool_says_why(project, isolated_env, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    cfg = isolated_env / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text("[tools]\ncomputer = true\n")
    script = write_script(project / "s.jsonl", [computer_turn(act("screenshot")), say("no screen")])
    out = run_inprocess(["--json", "--safety", "full_access", "--model", f"replay/{script}", "look"], project)
    assert out.code == 0, out.stderr
    (result,) = finished(out.events)
    assert result["status"] == "error" and "Wayland" in result["output"] and "DISPLAY" in result["output"]
