"""Screenshot scaling for the `computer` tool: pure arithmetic, no imports beyond the stdlib.

The model sees the screen through screenshots fitted to `MAX_LONG_EDGE` pixels on the long edge
and `MAX_PIXELS` in area (never enlarged), and it answers in pixels of those screenshots.
`Geometry` maps such a point back to the screen and a screen point (the pointer) forward.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_LONG_EDGE = 1568
MAX_PIXELS = 1_150_000


def fit(
    width: int, height: int, *, long_edge: int = MAX_LONG_EDGE, pixels: int = MAX_PIXELS
) -> tuple[int, int]:
    """The largest size with the aspect of `width` x `height` within both limits, never larger."""
    if width <= 0 or height <= 0:
        raise ValueError(f"not a screen size: {width}x{height}")
    scale = min(1.0, long_edge / max(width, height), math.sqrt(pixels / (width * height)))
    w, h = max(1, math.floor(width * scale)), max(1, math.floor(height * scale))
    # floating point can land a pixel short of a limit: grow while the next size still fits
    while True:
        if w >= h:
            nw, nh = w + 1, max(1, round((w + 1) * height / width))
        else:
            nw, nh = max(1, round((h + 1) * width / height)), h + 1
        if nw > width or nh > height or max(nw, nh) > long_edge or nw * nh > pixels:
            break
        w, h = nw, nh
    # ... or a pixel over one; step down until both hold
    while (max(w, h) > long_edge or w * h > pixels) and (w > 1 or h > 1):
        if w >= h:
            w -= 1
            h = max(1, round(w * height / width))
        else:
            h -= 1
            w = max(1, round(h * width / height))
    return w, h


@dataclass(frozen=True)
class Geometry:
    """A screen of `screen` size shown to the model as images of `shot` size."""

    screen_width: int
    screen_height: int
    shot_width: int
    shot_height: int

    @classmethod
    def for_screen(cls, width: int, height: int) -> Geometry:
        w, h = fit(width, height)
        return cls(width, height, w, h)

    @property
    def scale_x(self) -> float:
        return self.screen_width / self.shot_width

    @property
    def scale_y(self) -> float:
        return self.screen_height / self.shot_height

    def in_shot(self, x: int, y: int) -> bool:
        return 0 <= x < self.shot_width and 0 <= y < self.shot_height

    def to_screen(self, x: float, y: float) -> tuple[int, int]:
        """The screen pixel under screenshot pixel (x, y): the centre of the screen pixels it covers,
        kept on the screen."""
        sx = math.floor((x + 0.5) * self.scale_x)
        sy = math.floor((y + 0.5) * self.scale_y)
        return _clamp(sx, self.screen_width), _clamp(sy, self.screen_height)

    def to_shot(self, x: int, y: int) -> tuple[int, int]:
        """The screenshot pixel showing the centre of screen pixel (x, y) (the inverse of `to_screen`)."""
        return (
            _clamp(math.floor((x + 0.5) / self.scale_x), self.shot_width),
            _clamp(math.floor((y + 0.5) / self.scale_y), self.shot_height),
        )

    def region_to_screen(self, x1: int, y1: int, x2: int, y2: int) -> tuple[int, int, int, int]:
        """A screenshot rectangle (corners, any order) as a screen rectangle (left, top, right,
        bottom; right and bottom exclusive), at least one pixel each way."""
        left, right = sorted((x1, x2))
        top, bottom = sorted((y1, y2))
        sl = _clamp(math.floor(left * self.scale_x), self.screen_width)
        st = _clamp(math.floor(top * self.scale_y), self.screen_height)
        sr = min(self.screen_width, max(sl + 1, math.ceil(right * self.scale_x)))
        sb = min(self.screen_height, max(st + 1, math.ceil(bottom * self.scale_y)))
        return sl, st, sr, sb


def _clamp(value: int, size: int) -> int:
    return max(0, min(size - 1, value))
