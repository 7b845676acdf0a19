"""The real screen behind the `computer` tool: X11 through `mss` (pixels), `pynput` (the mouse)
and XTEST via python-xlib, pynput's own X library (keys: see `_XTestKeyboard`).

Nothing here is imported until `[tools] computer = true` builds the tool; `screen_problem` says
why a screen cannot be used (not Linux, no `DISPLAY`, a Wayland-only session, the `computer`
extra not installed, an X server that does not answer) without raising. Every method blocks
briefly (X round trips), so the tool calls them in a worker thread, one at a time.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Mapping
from typing import Any, Protocol

INSTALL_HINT = "pip install 'mermaid-cli[computer]'"

#: lower-cased key names models send (xdotool / X keysym style from Claude, upper-case words from
#: OpenAI) -> the X keysym pressed
KEY_ALIASES: dict[str, str] = {
    "return": "Return",
    "enter": "Return",
    "kp_enter": "KP_Enter",
    "backspace": "BackSpace",
    "escape": "Escape",
    "esc": "Escape",
    "tab": "Tab",
    "space": "space",
    "delete": "Delete",
    "del": "Delete",
    "insert": "Insert",
    "home": "Home",
    "end": "End",
    "page_up": "Prior",
    "pageup": "Prior",
    "prior": "Prior",
    "page_down": "Next",
    "pagedown": "Next",
    "next": "Next",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "arrowup": "Up",
    "arrowdown": "Down",
    "arrowleft": "Left",
    "arrowright": "Right",
    "ctrl": "Control_L",
    "control": "Control_L",
    "control_l": "Control_L",
    "control_r": "Control_R",
    "ctrl_l": "Control_L",
    "ctrl_r": "Control_R",
    "shift": "Shift_L",
    "shift_l": "Shift_L",
    "shift_r": "Shift_R",
    "alt": "Alt_L",
    "alt_l": "Alt_L",
    "alt_r": "Alt_R",
    "option": "Alt_L",
    "super": "Super_L",
    "super_l": "Super_L",
    "super_r": "Super_R",
    "meta": "Super_L",
    "cmd": "Super_L",
    "command": "Super_L",
    "win": "Super_L",
    "caps_lock": "Caps_Lock",
    "capslock": "Caps_Lock",
    "menu": "Menu",
    "print": "Print",
    "num_lock": "Num_Lock",
    "scroll_lock": "Scroll_Lock",
    "pause": "Pause",
    "minus": "minus",
    "plus": "plus",
    **{f"f{n}": f"F{n}" for n in range(1, 25)},
}

BUTTONS = ("left", "right", "middle")


class Screen(Protocol):
    """What the tool drives. `size` is the primary screen in pixels; points are screen pixels."""

    size: tuple[int, int]

    def grab(self, region: tuple[int, int, int, int] | None, out_size: tuple[int, int]) -> bytes:
        """PNG of `region` (left, top, right, bottom; the whole screen when None) at `out_size`."""
        ...

    def pointer(self) -> tuple[int, int]: ...

    def move(self, x: int, y: int) -> None: ...

    def press(self, button: str) -> None: ...

    def release(self, button: str) -> None: ...

    def click(self, button: str, count: int) -> None: ...

    def scroll(self, dx: int, dy: int) -> None: ...

    def type_text(self, text: str) -> None: ...

    def key_down(self, key: str) -> None: ...

    def key_up(self, key: str) -> None: ...


def screen_problem(env: Mapping[str, str], *, probe: bool = True) -> str | None:
    """Why no screen can be driven here (a sentence with the fix), or None when one can."""
    if not sys.platform.startswith("linux"):
        return f"the computer tool supports Linux X11 only for now (this is {sys.platform})"
    display = env.get("DISPLAY", "").strip()
    if not display:
        if env.get("WAYLAND_DISPLAY", "").strip():
            return (
                "the computer tool needs an X11 screen, and this is a Wayland session without X11 "
                "(WAYLAND_DISPLAY is set, DISPLAY is not); Wayland is not supported yet: run under "
                "Xwayland or Xvfb with DISPLAY set"
            )
        return (
            "the computer tool needs an X11 screen and DISPLAY is not set "
            "(in CI: start `Xvfb :99 -screen 0 1920x1080x24` and set DISPLAY=:99)"
        )
    missing = [m for m in ("mss", "pynput", "PIL") if not _importable(m)]
    if missing:
        names = ", ".join("pillow" if m == "PIL" else m for m in missing)
        return f"the computer tool needs {names}: {INSTALL_HINT}"
    if probe:
        try:
            size = primary_size(display)
        except Exception as exc:  # noqa: BLE001 - any failure to reach the X server is the answer
            return f"cannot open the X11 display {display!r}: {type(exc).__name__}: {exc}"
        if size[0] <= 0 or size[1] <= 0:
            return f"the X11 display {display!r} reports no screen"
    return None


def _importable(module: str) -> bool:
    from importlib.util import find_spec

    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _mss(display: str) -> Any:
    import mss

    factory = getattr(mss, "MSS", None) or mss.mss
    return factory(display=display)


def primary_size(display: str) -> tuple[int, int]:
    with _mss(display) as sct:
        monitors = sct.monitors
        primary = next((m for m in monitors[1:] if m.get("is_primary")), None)
        mon = primary or (monitors[1] if len(monitors) > 1 else monitors[0])
        return int(mon["width"]), int(mon["height"])


class X11Screen:
    """The primary X11 screen of `display`. Input goes through the XTEST extension (pynput)."""

    def __init__(self, display: str) -> None:
        self.display = display
        with _mss(display) as sct:
            monitors = sct.monitors
            primary = next((m for m in monitors[1:] if m.get("is_primary")), None)
            mon = primary or (monitors[1] if len(monitors) > 1 else monitors[0])
            self.origin = (int(mon["left"]), int(mon["top"]))
            self.size = (int(mon["width"]), int(mon["height"]))
        from pynput import mouse

        self._mouse_mod = mouse
        self._mouse = mouse.Controller()
        self._keys = _XTestKeyboard(display)

    def close(self) -> None:
        """Close the X connections now (not at garbage collection, when the server may be gone)."""
        display = self._mouse.__dict__.pop("_display", None)  # pynput closes it in __del__ otherwise
        for conn in (display, self._keys.display):
            try:
                if conn is not None:
                    conn.close()
            except Exception:  # noqa: BLE001 - a connection the server already closed
                pass

    # -- pixels -------------------------------------------------------------------------------
    def grab(self, region: tuple[int, int, int, int] | None, out_size: tuple[int, int]) -> bytes:
        from PIL import Image

        left, top, right, bottom = region or (0, 0, *self.size)
        box = {
            "left": self.origin[0] + left,
            "top": self.origin[1] + top,
            "width": right - left,
            "height": bottom - top,
        }
        with _mss(self.display) as sct:
            raw = sct.grab(box)
            image = Image.frombytes("RGB", raw.size, raw.bgra, "raw", "BGRX")
        if image.size != out_size:
            image = image.resize(out_size, Image.Resampling.LANCZOS)
        buf = io.BytesIO()
        image.save(buf, format="PNG", compress_level=6)
        return buf.getvalue()

    # -- mouse --------------------------------------------------------------------------------
    def pointer(self) -> tuple[int, int]:
        x, y = self._mouse.position
        return int(x) - self.origin[0], int(y) - self.origin[1]

    def move(self, x: int, y: int) -> None:
        self._mouse.position = (self.origin[0] + x, self.origin[1] + y)

    def _button(self, name: str) -> Any:
        return getattr(self._mouse_mod.Button, name)

    def press(self, button: str) -> None:
        self._mouse.press(self._button(button))

    def release(self, button: str) -> None:
        self._mouse.release(self._button(button))

    def click(self, button: str, count: int) -> None:
        self._mouse.click(self._button(button), count)

    def scroll(self, dx: int, dy: int) -> None:
        self._mouse.scroll(dx, dy)

    # -- keyboard -----------------------------------------------------------------------------
    def type_text(self, text: str) -> None:
        for char in text:
            self._keys.tap(char_keysym(char))

    def key_down(self, key: str) -> None:
        self._keys.down(key_keysym(key))

    def key_up(self, key: str) -> None:
        self._keys.up(key_keysym(key))


class _XTestKeyboard:
    """Keys through the XTEST extension, the way a real keyboard arrives (pynput would type
    characters with XSendEvent, which many clients ignore and which misses the window when no
    window manager gives it focus). A keysym the keymap lacks is put on a spare keycode meanwhile."""

    def __init__(self, display: str) -> None:
        from Xlib import XK
        from Xlib import display as xdisplay

        self._d = self.display = xdisplay.Display(display)
        self._shift = self._d.keysym_to_keycode(XK.string_to_keysym("Shift_L"))
        self._level3 = self._d.keysym_to_keycode(XK.string_to_keysym("ISO_Level3_Shift"))
        self._borrowed: dict[int, int] = {}  # keysym -> spare keycode it sits on

    def _fake(self, kind: int, keycode: int) -> None:
        from Xlib.ext import xtest

        xtest.fake_input(self._d, kind, keycode)

    def _locate(self, keysym: int) -> tuple[int, list[int]]:
        """(keycode, modifier keycodes to hold) that produce `keysym`."""
        for keycode, index in self._d.keysym_to_keycodes(keysym):
            mods = {0: [], 1: [self._shift], 4: [self._level3], 5: [self._shift, self._level3]}.get(index)
            if mods is not None and all(mods):
                return keycode, mods
        return self._borrow(keysym), []

    def _borrow(self, keysym: int) -> int:
        import time

        if keysym in self._borrowed:
            return self._borrowed[keysym]
        low = self._d.display.info.min_keycode
        high = self._d.display.info.max_keycode
        mapping = self._d.get_keyboard_mapping(low, high - low + 1)
        used = set(self._borrowed.values())
        spare = next(
            (low + i for i in range(len(mapping) - 1, -1, -1) if not any(mapping[i]) and low + i not in used),
            None,
        )
        if spare is None:
            raise ValueError(f"no spare keycode to type keysym {keysym:#x}")
        self._d.change_keyboard_mapping(spare, [(keysym,) * max(1, len(mapping[0]))])
        self._d.sync()
        time.sleep(0.05)  # let clients see the new mapping before the key arrives
        self._borrowed[keysym] = spare
        return spare

    def _release_borrowed(self, keysym: int) -> None:
        spare = self._borrowed.pop(keysym, None)
        if spare is not None:
            import time

            time.sleep(0.05)
            self._d.change_keyboard_mapping(spare, [(0,)])
            self._d.sync()

    def tap(self, keysym: int) -> None:
        from Xlib import X

        keycode, mods = self._locate(keysym)
        for mod in mods:
            self._fake(X.KeyPress, mod)
        self._fake(X.KeyPress, keycode)
        self._fake(X.KeyRelease, keycode)
        for mod in reversed(mods):
            self._fake(X.KeyRelease, mod)
        self._d.sync()
        self._release_borrowed(keysym)

    def down(self, keysym: int) -> None:
        from Xlib import X

        keycode, _mods = self._locate(keysym)  # a combination's own modifiers say the level
        self._fake(X.KeyPress, keycode)
        self._d.sync()

    def up(self, keysym: int) -> None:
        from Xlib import X

        keycode, _mods = self._locate(keysym)
        self._fake(X.KeyRelease, keycode)
        self._d.sync()
        self._release_borrowed(keysym)


def char_keysym(char: str) -> int:
    """The X keysym that types `char` (Latin-1 directly, other characters as Unicode keysyms)."""
    if char == "\n":
        return 0xFF0D  # Return
    if char == "\t":
        return 0xFF09  # Tab
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x01000000 | code


def key_keysym(name: str) -> int:
    """The X keysym of a key name (`Return`, `ctrl`, `a`, `F5`, any X keysym name)."""
    if len(name) == 1:
        return char_keysym(name)
    from Xlib import XK

    keysym = XK.string_to_keysym(KEY_ALIASES.get(name.lower(), name))
    if keysym == 0:
        raise ValueError(f"unknown key name {name!r}")
    return keysym


def split_combo(combo: str) -> list[str]:
    """`ctrl+shift+t` -> ["ctrl", "shift", "t"]; a lone `+` is the plus key."""
    combo = combo.strip()
    if combo == "+":
        return ["+"]
    parts = [p.strip() for p in combo.split("+")]
    if combo.endswith("++"):
        parts = [*parts[:-2], "+"]
    return [p for p in parts if p]


def known_key(name: str) -> bool:
    """Whether `name` is a key the X11 screen can press (checked before anything is sent)."""
    return len(name) == 1 or name.lower() in KEY_ALIASES or _is_keysym(name)


def _is_keysym(name: str) -> bool:
    try:
        from Xlib import XK
    except ImportError:
        return False
    return XK.string_to_keysym(name) != 0
