"""`render_image`: image bytes the model has in hand (inline base64, or a scratchpad entry a
command's output was saved to) shown to it as an image block. Offered only when the run's model
accepts images (the model table's `vision`).

PNG, JPEG, GIF, WebP and BMP pass through unchanged; any other raster format Pillow reads (TIFF,
ICO, TGA, PNM, QOI, DDS, ...) is converted to PNG. Pillow is imported only for a conversion.
"""

from __future__ import annotations

import base64
import binascii
import io
import re

from pydantic import Field, model_validator

from mermaid_cli.core.types import ImageData, ToolResult
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext

MAX_IMAGE_BYTES = int(3.75 * 1024 * 1024)
NOT_VISION = (
    "render_image is offered only to models that accept images; this run's model does not "
    "(the model table's `vision`)"
)
_PASS_THROUGH = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)
# what a command's result appends after its output (`[exit code 0]`, notes), and a data: URL head
_TRAILING_NOTES = re.compile(r"(\n\[[^\n]*\])+\s*$")
_DATA_URL = re.compile(r"^data:[\w/+.-]+;base64,", re.IGNORECASE)


class RenderImageArgs(ToolArgs):
    base64: str | None = Field(default=None, description="The image bytes, base64-encoded.")
    from_scratchpad: str | None = Field(
        default=None, description="A scratchpad entry holding the base64 (prefer it for large images)."
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> RenderImageArgs:
        if (self.base64 is None) == (self.from_scratchpad is None):
            raise ValueError("give exactly one of base64 or from_scratchpad")
        return self


def sniff(data: bytes) -> str | None:
    """The media type of a format that passes through, or None."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    for magic, media_type in _PASS_THROUGH:
        if data.startswith(magic):
            return media_type
    return None


def decode(text: str) -> bytes:
    """base64 text as a command prints it (wrapped lines, a data: URL head, result notes after)."""
    text = _TRAILING_NOTES.sub("", text.strip())
    text = _DATA_URL.sub("", text.strip())
    compact = "".join(text.split())
    try:
        return base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"not valid base64: {exc}") from None


#: pixels a conversion decodes at most (~100 MB as RGBA): Pillow's own bomb check allows ~179 M,
#: gigabytes once converted
MAX_PIXELS = 25_000_000


def to_png(data: bytes) -> bytes:
    """Any raster image Pillow reads, as PNG (ValueError when it is not one)."""
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise ValueError(
            "only PNG, JPEG, GIF, WebP and BMP can be shown without Pillow "
            "(pip install 'mermaid-agent[images]' converts the other formats)"
        ) from None
    try:
        with Image.open(io.BytesIO(data)) as opened:
            width, height = opened.size  # from the header: nothing is decoded yet
            if width * height > MAX_PIXELS:
                raise ValueError(
                    f"the image is {width}x{height} pixels; at most {MAX_PIXELS:,} are converted "
                    "(a 465 KB file can decode to gigabytes)"
                )
            opened.load()
            img: Image.Image = opened
            if img.mode not in ("RGB", "RGBA", "L", "LA", "P"):
                img = img.convert("RGBA")  # 16-bit, CMYK, float (HDR): what PNG can hold
            out = io.BytesIO()
            img.save(out, format="PNG")
            return out.getvalue()
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise ValueError(f"the bytes are not an image format Mermaid can read ({exc})") from None


class RenderImage(Tool):
    name = "render_image"
    description = (
        "Show an image you hold as base64 (inline or in a scratchpad entry) as an image; "
        "PNG/JPEG/GIF/WebP/BMP as is, other raster formats converted to PNG."
    )
    Args = RenderImageArgs
    category = "session"

    async def run(self, args: RenderImageArgs, ctx: ToolContext) -> ToolResult:
        if args.from_scratchpad is not None:
            text = ctx.scratchpad.get(args.from_scratchpad)
            if text is None:
                names = ", ".join(ctx.scratchpad.names()) or "none yet"
                return ToolResult.error(f"no scratchpad entry {args.from_scratchpad!r}; entries: {names}")
            source = f"scratchpad {args.from_scratchpad}"
        else:
            text, source = args.base64 or "", "base64"
        try:
            data = decode(text)
            media_type = sniff(data)
            converted = media_type is None
            if converted:
                data, media_type = to_png(data), "image/png"
        except ValueError as exc:
            return ToolResult.error(f"render_image: {exc}")
        assert media_type is not None
        if len(data) > MAX_IMAGE_BYTES:
            return ToolResult.error(
                f"render_image: the image is {len(data)} bytes; at most {MAX_IMAGE_BYTES} (3.75 MiB) can be shown"
            )
        note = " (converted to PNG)" if converted else ""
        message = f"Rendered {media_type} from {source}, {len(data)} bytes{note}"
        return ToolResult(
            content=message,
            summary=message,
            images=(ImageData(media_type=media_type, data=base64.b64encode(data).decode("ascii")),),
        )


def image_tools(*, vision: bool) -> tuple[list[Tool], dict[str, str]]:
    """([render_image] for a vision model, else []), {name: why it is absent}."""
    return ([RenderImage()], {}) if vision else ([], {"render_image": NOT_VISION})
