"""Turn a fetched body into text a model can read.

HTML → main content via trafilatura (Markdown-ish, links kept; imported lazily because it takes
a good fraction of a second to import), JSON → pretty-printed, XML and other text → as text,
PDFs and images → a one-line summary (type, size). `raw` returns the source as served.
"""

from __future__ import annotations

import asyncio
import codecs
import html as html_lib
import json
import re
import struct
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Rendered:
    """A fetched body as text, and how it was extracted."""

    text: str
    media_type: str
    extraction: str  # trafilatura | html2txt | stdlib | raw | json | xml | text | summary
    charset: str | None = None
    binary: bool = False


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._-]+)""", re.I)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)

_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def parse_content_type(value: str | None) -> tuple[str, str | None]:
    """(media type lowercased, charset or None) from a Content-Type header."""
    if not value:
        return "", None
    parts = [p.strip() for p in value.split(";")]
    media_type = parts[0].lower()
    charset = None
    for param in parts[1:]:
        key, _, val = param.partition("=")
        if key.strip().lower() == "charset":
            charset = val.strip().strip("\"'") or None
    return media_type, charset


def sniff_media_type(body: bytes, declared: str) -> str:
    """The media type to treat `body` as. Binary magic wins over a declared text type."""
    head = body[:64]
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    for magic, kind in _IMAGE_MAGIC:
        if head.startswith(magic):
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if declared:
        return declared
    text = body[:1024].lstrip().lower()
    if text.startswith((b"<!doctype html", b"<html")) or b"<body" in text:
        return "text/html"
    if text.startswith((b"{", b"[")):
        return "application/json"
    if text.startswith(b"<?xml"):
        return "application/xml"
    if b"\x00" in body[:1024]:
        return "application/octet-stream"
    return "text/plain"


def decode(body: bytes, charset: str | None, media_type: str = "") -> tuple[str, str]:
    """Text of `body` and the charset used. Invalid bytes become U+FFFD, never an exception."""
    candidates = [charset]
    if media_type == "text/html" and not charset:
        match = _META_CHARSET.search(body[:4096])
        if match:
            candidates.append(match.group(1).decode("ascii", "replace"))
    for name in candidates:
        if not name:
            continue
        try:
            codec = codecs.lookup(name).name
        except LookupError:
            continue
        return body.decode(codec, errors="replace"), codec
    if body.startswith(codecs.BOM_UTF8):
        return body[3:].decode("utf-8", errors="replace"), "utf-8"
    return body.decode("utf-8", errors="replace"), "utf-8"


def is_html(media_type: str) -> bool:
    return media_type in ("text/html", "application/xhtml+xml")


def is_json(media_type: str) -> bool:
    return media_type == "application/json" or media_type.endswith("+json")


def is_xml(media_type: str) -> bool:
    return media_type in ("application/xml", "text/xml") or media_type.endswith("+xml")


def is_text(media_type: str) -> bool:
    return (
        media_type.startswith("text/")
        or is_json(media_type)
        or is_xml(media_type)
        or media_type in ("application/javascript", "application/x-javascript", "application/x-ndjson")
    )


# Extraction is CPU-bound (lxml): run it off the event loop, at most two at a time.
_EXTRACTORS = threading.BoundedSemaphore(2)


async def render_in_thread(
    body: bytes, content_type: str | None, *, url: str = "", raw: bool = False
) -> Rendered:
    def work() -> Rendered:
        with _EXTRACTORS:
            return render(body, content_type, url=url, raw=raw)

    return await asyncio.to_thread(work)


def render(body: bytes, content_type: str | None, *, url: str = "", raw: bool = False) -> Rendered:
    declared, charset = parse_content_type(content_type)
    media_type = sniff_media_type(body, declared)
    if not is_text(media_type):
        return Rendered(
            text=summarise_binary(body, media_type), media_type=media_type, extraction="summary", binary=True
        )
    text, used = decode(body, charset, media_type)
    if raw:
        return Rendered(text=text, media_type=media_type, extraction="raw", charset=used)
    if is_html(media_type):
        content, how = extract_html(text, url)
        return Rendered(text=content, media_type=media_type, extraction=how, charset=used)
    if is_json(media_type):
        try:
            value = json.loads(text)
        except ValueError:
            return Rendered(text=text, media_type=media_type, extraction="text", charset=used)
        pretty = json.dumps(value, indent=2, ensure_ascii=False)
        return Rendered(text=pretty, media_type=media_type, extraction="json", charset=used)
    if is_xml(media_type):
        return Rendered(text=text, media_type=media_type, extraction="xml", charset=used)
    return Rendered(text=text, media_type=media_type, extraction="text", charset=used)


def readability_status() -> str | None:
    """None when the readability stack (trafilatura and what it imports) loads; otherwise why not,
    with the fix. `web_fetch` still works without it, with plain-text extraction."""
    try:
        import trafilatura  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - an upstream packaging change shows up as any error
        return (
            f"trafilatura cannot be imported ({type(exc).__name__}: {exc}); HTML pages are reduced to "
            "plain text without main-content extraction. Fix: pip install --upgrade trafilatura lxml_html_clean"
        )
    return None


def extract_html(page: str, url: str = "") -> tuple[str, str]:
    """Main content of an HTML page as Markdown-ish text, with the page title on top.

    The extraction used is returned too: `trafilatura` (main content), `html2txt` (trafilatura's
    whole-page text, when it found no main content) or `stdlib` (the readability stack cannot be
    imported: the whole page as text, links kept, scripts and styles dropped)."""
    title = _title(page)
    content: str | None = None
    try:
        import trafilatura  # slow import: only when a page is actually fetched
    except Exception:  # noqa: BLE001 - see readability_status(); the page still gets plain text
        content, how = html_to_text(page), "stdlib"
    else:
        try:
            content = trafilatura.extract(
                page,
                url=url or None,
                output_format="markdown",
                include_links=True,
                include_tables=True,
                include_comments=False,
                favor_recall=True,
            )
        except Exception:  # noqa: BLE001 - a page that breaks the extractor still gets plain text
            content = None
        how = "trafilatura"
        if not content or not content.strip():
            content = trafilatura.html2txt(page) or ""
            how = "html2txt"
    content = content.strip() or "(the page has no readable text; try raw: true)"
    if title and title not in content[:500]:
        content = f"Title: {title}\n\n{content}"
    return content, how


_SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe"})
_BLOCK_TAGS = frozenset(
    {"p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "br", "hr", "li",
     "ul", "ol", "table", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "form"}
)


def html_to_text(page: str) -> str:
    """The text of an HTML page with the standard library only: blocks become lines, headings
    `#`-prefixed, links `[text](href)`; scripts, styles and templates dropped."""
    from html.parser import HTMLParser

    class _Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.parts: list[str] = []
            self.skip = 0
            self.href: str | None = None
            self.link_text: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag in _SKIP_TAGS:
                self.skip += 1
            elif tag in _BLOCK_TAGS:
                self.parts.append("\n")
                if tag[0] == "h" and tag[1:].isdigit():
                    self.parts.append("#" * int(tag[1:]) + " ")
                elif tag == "li":
                    self.parts.append("- ")
            elif tag == "a":
                self.href = dict(attrs).get("href")
                self.link_text = []

        def handle_endtag(self, tag: str) -> None:
            if tag in _SKIP_TAGS:
                self.skip = max(0, self.skip - 1)
            elif tag in _BLOCK_TAGS:
                self.parts.append("\n")
            elif tag == "a" and self.href is not None:
                text = " ".join("".join(self.link_text).split())
                self.parts.append(f"[{text}]({self.href})" if text else "")
                self.href = None

        def handle_data(self, data: str) -> None:
            if self.skip:
                return
            (self.link_text if self.href is not None else self.parts).append(data)

    parser = _Text()
    try:
        parser.feed(page)
        parser.close()
    except Exception:  # noqa: BLE001 - malformed markup: keep what was read
        pass
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _title(page: str) -> str:
    match = _TITLE.search(page[:200_000])
    if not match:
        return ""
    return " ".join(html_lib.unescape(match.group(1)).split())[:300]


def summarise_binary(body: bytes, media_type: str) -> str:
    size = len(body)
    if media_type == "application/pdf":
        pages = len(re.findall(rb"/Type\s*/Page(?![a-zA-Z])", body))
        page_note = f", about {pages} page{'s' if pages != 1 else ''}" if pages else ""
        return f"[PDF document, {size} bytes{page_note}; its text is not extracted]"
    if media_type.startswith("image/"):
        dims = image_dimensions(body)
        dim_note = f", {dims[0]}x{dims[1]}" if dims else ""
        return f"[{media_type} image{dim_note}, {size} bytes]"
    return f"[{media_type or 'binary'} content, {size} bytes; not shown]"


def image_dimensions(body: bytes) -> tuple[int, int] | None:
    """Width and height from PNG/GIF/JPEG headers (best effort)."""
    try:
        if body.startswith(b"\x89PNG") and len(body) >= 24:
            width, height = struct.unpack(">II", body[16:24])
            return width, height
        if body[:6] in (b"GIF87a", b"GIF89a") and len(body) >= 10:
            width, height = struct.unpack("<HH", body[6:10])
            return width, height
        if body.startswith(b"\xff\xd8"):
            i = 2
            while i + 9 < len(body):
                if body[i] != 0xFF:
                    return None
                marker = body[i + 1]
                length = struct.unpack(">H", body[i + 2 : i + 4])[0]
                if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
                    height, width = struct.unpack(">HH", body[i + 5 : i + 9])
                    return width, height
                i += 2 + length
    except struct.error:
        return None
    return None
