"""Xvfb and the recording window for the computer-tool tests.

`xvfb_display()` starts `Xvfb` on a display number it picks itself (`-displayfd`, so parallel
workers never collide) and `RecorderApp` runs `computer_app.py` on it. Tests skip, saying why,
only when Xvfb or the screen libraries are missing (`.ci/run` installs them).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

APP = Path(__file__).with_name("computer_app.py")
SCREEN = (1920, 1080)


def skip_reason() -> str | None:
    if not sys.platform.startswith("linux"):
        return "the computer tool is Linux X11 only"
    if shutil.which("Xvfb") is None:
        return "Xvfb not found (apt-get install xvfb); the X11 computer-tool tests need it"
    missing = []
    for module in ("mss", "pynput", "PIL", "tkinter"):
        try:
            __import__(module if module != "pynput" else "Xlib")
        except ImportError:
            missing.append(module)
    if missing:
        return f"missing for the computer-tool tests: {', '.join(missing)} (pip install -e '.[computer]')"
    return None


@contextmanager
def xvfb_display(size: tuple[int, int] = SCREEN) -> Iterator[str]:
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", f"{size[0]}x{size[1]}x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    try:
        number = b""
        deadline = time.monotonic() + 20
        while not number.endswith(b"\n"):
            ready, _, _ = select.select([read_fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(read_fd, 16) if ready else b""
            if not chunk:
                pytest.skip("Xvfb did not start (no display number within 20 s)")
            number += chunk
        yield f":{number.decode().strip()}"
    finally:
        os.close(read_fd)
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class RecorderApp:
    """The test window on `display`; `events()` reads what it received."""

    def __init__(self, display: str, log: Path) -> None:
        self.log = log
        log.write_text("")
        env = {**os.environ, "DISPLAY": display}
        self.proc = subprocess.Popen([sys.executable, str(APP), str(log)], env=env)
        self.wait_for(lambda evs: any(e["event"] == "ready" for e in evs), "the window to map")

    def events(self, kind: str | None = None) -> list[dict]:
        lines = [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]
        return [e for e in lines if kind is None or e["event"] == kind]

    def wait_for(self, condition, what: str, timeout: float = 15) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            evs = self.events()
            if condition(evs):
                return evs
            if self.proc.poll() is not None:
                raise AssertionError(f"the test window exited ({self.proc.returncode}) before {what}")
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}; the window logged {self.events()}")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def move_pointer(display: str, x: int, y: int) -> None:
    """Move the pointer the way a person would (not through Mermaid)."""
    from Xlib import X
    from Xlib import display as xdisplay
    from Xlib.ext import xtest

    d = xdisplay.Display(display)
    try:
        xtest.fake_input(d, X.MotionNotify, x=x, y=y)
        d.sync()
    finally:
        d.close()


def pointer(display: str) -> tuple[int, int]:
    from Xlib import display as xdisplay

    d = xdisplay.Display(display)
    try:
        reply = d.screen().root.query_pointer()
        return reply.root_x, reply.root_y
    finally:
        d.close()
