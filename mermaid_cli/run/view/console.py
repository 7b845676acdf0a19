"""The console the terminal view writes to: stderr wrapped so a closed terminal silences the view
instead of raising into the run, sized by its own terminal (resizes and `COLUMNS` followed)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TextIO

from rich.console import Console, ConsoleDimensions


class TerminalStream:
    """stderr as the console sees it: a write that fails (the terminal closed) silences the view
    instead of raising into the run, and so does a hang-up."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.dead = False

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"

    def write(self, text: str) -> int:
        if not self.dead:
            try:
                self._stream.write(text)
            except UnicodeEncodeError:
                self._write_replaced(text)
            except (OSError, ValueError):
                self.dead = True
        return len(text)

    def _write_replaced(self, text: str) -> None:
        try:
            self._stream.write(text.encode(self.encoding, "replace").decode(self.encoding))
        except (OSError, ValueError):
            self.dead = True

    def flush(self) -> None:
        if not self.dead:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self.dead = True

    def isatty(self) -> bool:
        return not self.dead

    def fileno(self) -> int:
        return self._stream.fileno()


class TerminalConsole(Console):
    """A console sized by its own stream's terminal (rich asks stdin first, which may be another
    terminal or none), read again at each render so a resized window re-lays out the next frame;
    `COLUMNS` and `LINES` still win."""

    @property
    def size(self) -> ConsoleDimensions:
        try:
            width, height = os.get_terminal_size(self.file.fileno())
        except (AttributeError, ValueError, OSError):
            return super().size
        columns, lines = self._environ.get("COLUMNS", ""), self._environ.get("LINES", "")
        width = int(columns) if columns.isdigit() else width
        height = int(lines) if lines.isdigit() else height
        return ConsoleDimensions(self._width or width or 80, self._height or height or 25)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


def terminal_console(stream: TextIO, env: Mapping[str, str]) -> tuple[Console, TerminalStream]:
    """A console on the run's stderr; its width follows the terminal (and `COLUMNS`)."""
    wrapped = TerminalStream(stream)
    console = TerminalConsole(
        file=wrapped,  # type: ignore[arg-type]  # a TextIO in all that rich uses
        force_terminal=True,
        highlight=False,
        markup=False,
        emoji=False,
        _environ=dict(env),
    )
    return console, wrapped
