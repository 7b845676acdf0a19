"""`render_image` through real scripted runs: pass-through, conversion to PNG, the cap, vision only."""

from __future__ import annotations

import base64
import io
import json

import pytest
from conftest import call, run_inprocess, say, write_script
from PIL import Image

from mermaid_cli.tools.render_image import MAX_IMAGE_BYTES

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def _image(fmt: str, size=(3, 2)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (255, 0, 0)).save(out, format=fmt)
    return out.getvalue()


def _finished(out, name="render_image"):
    return [e for e in out.events if e["type"] == "tool_finished" and e["name"] == name]


def _sent_images(project, sid):
    lines = [
        json.loads(x) for x in (project / ".mermaid/conversations" / f"{sid}.jsonl").read_text().splitlines()
    ]
    return [i for x in lines for b in x.get("message", {}).get("content", []) for i in b.get("images", [])]


def test_scratchpad_base64_becomes_an_image_block_and_other_formats_turn_png(project):
    (project / "pic.png").write_bytes(PNG)
    (project / "pic.tiff").write_bytes(_image("TIFF"))
    (project / "pic.bmp").write_bytes(_image("BMP"))
    script = write_script(
        project / "s.jsonl",
        [
            call("execute_command", {"command": "base64 -w0 pic.png", "scratchpad": "frame"}, "c1"),
            call("render_image", {"from_scratchpad": "frame"}, "c2"),
            call("execute_command", {"command": "base64 pic.tiff", "scratchpad": "tiff"}, "c3"),
            call("render_image", {"from_scratchpad": "tiff"}, "c4"),
            call("render_image", {"base64": base64.b64encode(_image("BMP")).decode()}, "c5"),
            call("render_image", {"base64": "bm90IGFuIGltYWdl"}, "c6"),
            call("render_image", {"base64": "AAAA", "from_scratchpad": "frame"}, "c7"),
            say("ok"),
        ],
    )
    out = run_inprocess(["--json", "--model", f"replay/{script}", "look"], project)
    assert out.code == 0, out.stderr
    assert "render_image" in out.events[0]["tools"]
    png, tiff, bmp, junk, both = _finished(out)
    assert png["status"] == "success" and png["summary"].startswith(
        "Rendered image/png from scratchpad frame"
    )
    assert "converted" not in png["summary"]
    assert (
        tiff["status"] == "success"
        and "image/png" in tiff["summary"]
        and "converted to PNG" in tiff["summary"]
    )
    assert bmp["status"] == "success" and bmp["summary"].startswith("Rendered image/bmp from base64")
    assert junk["status"] == "error" and "not an image format" in junk["output"]
    assert both["status"] == "error" and "exactly one of base64 or from_scratchpad" in both["output"]
    images = _sent_images(project, out.events[0]["session_id"])
    assert images[0] == {"media_type": "image/png", "data": base64.b64encode(PNG).decode()}
    converted = base64.b64decode(images[1]["data"])
    assert converted.startswith(b"\x89PNG") and Image.open(io.BytesIO(converted)).size == (3, 2)


def test_images_over_the_cap_are_refused(project):
    big = b"\x89PNG\r\n\x1a\n" + b"\0" * MAX_IMAGE_BYTES
    (project / "big.b64").write_text(base64.b64encode(big).decode())
    script = write_script(
        project / "s.jsonl",
        [
            call("execute_command", {"command": "cat big.b64", "scratchpad": "b"}, "c1"),
            call("render_image", {"from_scratchpad": "b"}, "c2"),
            say("ok"),
        ],
    )
    out = run_inprocess(["--json", "--model", f"replay/{script}", "look"], project)
    (refused,) = _finished(out)
    assert refused["status"] == "error" and "at most 3932160 (3.75 MiB)" in refused["output"]


def test_offered_only_to_vision_models(project):
    script = write_script(
        project / "s.jsonl",
        [call("render_image", {"base64": "AAAA"}), say("ok")],
        model="anthropic/claude-3-5-haiku",
    )
    out = run_inprocess(["--json", "--model", f"replay/{script}", "look"], project)
    assert "render_image" not in out.events[0]["tools"]
    (absent,) = _finished(out)
    assert absent["status"] == "error" and "only to models that accept images" in absent["output"]


def test_an_image_too_large_to_decode_is_refused_before_decoding():
    """A 13,300 x 13,300 bilevel TIFF of 465 KB decoded and converted to RGBA: 915 MB peak RSS."""
    from mermaid_cli.tools.render_image import MAX_PIXELS, to_png

    side = int(MAX_PIXELS**0.5) + 100
    out = io.BytesIO()
    Image.new("1", (side, side)).save(out, format="TIFF", compression="packbits")
    with pytest.raises(ValueError, match="pixels"):
        to_png(out.getvalue())
