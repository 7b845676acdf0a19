"""A small X11 window for the computer-tool tests: it records the clicks and keys it receives.

Run as `python computer_app.py LOG`; with no window manager (Xvfb) the window sits exactly at
`LAYOUT["window"]`. Every event is one JSON line in LOG: `ready` once mapped, `press` (button
number and root coordinates), `clicked` (the button's command ran), `key` (keysym and char),
`entry` (the text field's content when Return is pressed).
"""

from __future__ import annotations

import json
import sys
import tkinter as tk

#: screen-pixel rectangles (x, y, width, height); the widgets' are relative to the window
LAYOUT = {
    "window": (300, 200, 900, 560),
    "button": (120, 100, 260, 90),
    "entry": (120, 300, 500, 50),
}


def absolute(name: str) -> tuple[int, int, int, int]:
    wx, wy, _, _ = LAYOUT["window"]
    x, y, w, h = LAYOUT[name]
    return (x, y, w, h) if name == "window" else (wx + x, wy + y, w, h)


def centre(name: str) -> tuple[int, int]:
    x, y, w, h = absolute(name)
    return x + w // 2, y + h // 2


def main(log_path: str) -> None:
    log = open(log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - lives as long as the app

    def record(**fields: object) -> None:
        log.write(json.dumps(fields) + "\n")

    root = tk.Tk()
    x, y, w, h = LAYOUT["window"]
    root.geometry(f"{w}x{h}+{x}+{y}")
    root.configure(background="#f4f1e8")
    root.title("computer-tool test")
    bx, by, bw, bh = LAYOUT["button"]
    button = tk.Button(
        root,
        text="Press me",
        font=("TkDefaultFont", 20),
        background="#2d6cdf",
        foreground="white",
        command=lambda: record(event="clicked", widget="button"),
    )
    button.place(x=bx, y=by, width=bw, height=bh)
    ex, ey, ew, eh = LAYOUT["entry"]
    entry = tk.Entry(root, font=("TkDefaultFont", 18))
    entry.place(x=ex, y=ey, width=ew, height=eh)
    tk.Label(root, text="Mermaid computer tool", font=("TkDefaultFont", 16), background="#f4f1e8").place(
        x=120, y=30
    )

    root.bind_all(
        "<ButtonPress>",
        lambda e: record(event="press", button=e.num, x=e.x_root, y=e.y_root, widget=str(e.widget)),
    )
    root.bind_all("<KeyPress>", lambda e: record(event="key", keysym=e.keysym, char=e.char))
    entry.bind("<Return>", lambda e: record(event="entry", text=entry.get()))

    def ready() -> None:
        root.update_idletasks()
        record(event="ready", x=root.winfo_rootx(), y=root.winfo_rooty())

    root.after(300, ready)
    root.mainloop()


if __name__ == "__main__":
    main(sys.argv[1])
