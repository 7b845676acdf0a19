"""The model-facing side of MCP: tool adapters, `tool_search`, and the resource tools.

Nothing here imports `mcp`: adapters talk to the manager through the small `McpBackend` protocol,
and MCP content blocks are read by their `type` field, so this module stays cheap to import."""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from pydantic import ConfigDict, Field

from mermaid_cli.core.types import ImageData, ToolResult, ToolSpec
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext, cap_text

MAX_NAME = 64
RESOURCE_OUTPUT_CHARS = 100_000
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})

# ---------------------------------------------------------------------------------------------
# Names


_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(part: str) -> str:
    return _UNSAFE.sub("_", part)


def tool_name(server: str, raw: str, taken: set[str] | None = None) -> str:
    """`mcp__<server>__<tool>` in `[A-Za-z0-9_-]`, at most 64 characters. On overflow or a
    collision with `taken`, the name is cut and given a hash suffix that is stable for the pair."""
    name = f"mcp__{sanitize(server)}__{sanitize(raw)}"
    if len(name) <= MAX_NAME and (taken is None or name not in taken):
        return name
    digest = hashlib.sha256(f"{server}\0{raw}".encode()).hexdigest()
    for width in range(8, 65):
        suffix = "_" + digest[:width]
        candidate = name[: MAX_NAME - len(suffix)] + suffix
        if taken is None or candidate not in taken:
            return candidate
    raise ValueError(f"cannot name tool {raw!r} of server {server!r}")  # pragma: no cover


# ---------------------------------------------------------------------------------------------
# Schemas

# Annotations and keywords the providers reject or ignore; dropped wherever a schema sits.
_DROP = frozenset(
    {
        "$schema",
        "$id",
        "$defs",
        "definitions",
        "$comment",
        "$anchor",
        "$dynamicAnchor",
        "$dynamicRef",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
        "if",
        "then",
        "else",
        "dependentSchemas",
        "dependentRequired",
        "dependencies",
        "unevaluatedProperties",
        "unevaluatedItems",
        "propertyNames",
        "patternProperties",
    }
)
_SCHEMA_MAPS = ("properties",)
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE = ("not", "contains")
_MAX_REF_DEPTH = 8


def normalize_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """A provider-friendly copy of an MCP input schema: local `$ref`s inlined, `$defs` and other
    unsupported keywords dropped, `const` turned into `enum`, nullable `anyOf` flattened, draft-4
    boolean exclusive bounds and `x-*` extensions removed; the root is always an object."""
    root = copy.deepcopy(schema) if isinstance(schema, dict) else {}
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        if isinstance(root.get(key), dict):
            defs.update({f"#/{key}/{k}": v for k, v in root[key].items()})
    out = _norm(root, defs, ())
    if not isinstance(out, dict):
        out = {}
    if out.get("type") != "object":
        out["type"] = "object"
    out.setdefault("properties", {})
    return out


def _norm(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if not isinstance(node, dict):
        return node  # booleans (`true` schemas, `additionalProperties: false`) pass through
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref)
        if target is None or ref in seen or len(seen) >= _MAX_REF_DEPTH:
            # unresolvable or recursive: an open schema is still a valid description
            resolved: dict[str, Any] = {}
        else:
            resolved = _norm(target, defs, (*seen, ref))
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if siblings:
            resolved = {**resolved, **_norm(siblings, defs, seen)}
        return resolved

    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP or key.startswith("x-"):
            continue
        if key == "title" and isinstance(value, str):
            continue
        if key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
            continue  # draft-4 form; the numeric draft-6+ form is kept
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _norm(sub, defs, seen) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_norm(sub, defs, seen) for sub in value]
        elif key in _SCHEMA_ONE or key in ("additionalProperties", "items"):
            if isinstance(value, list):
                out[key] = [_norm(sub, defs, seen) for sub in value]
            else:
                out[key] = _norm(value, defs, seen)
        elif key == "const":
            out["enum"] = [value]
        else:
            out[key] = value
    return _flatten_nullable(out)


def _flatten_nullable(node: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [X, {type: null}]` (what pydantic writes for `X | None`) becomes X."""
    for key in ("anyOf", "oneOf"):
        options = node.get(key)
        if not isinstance(options, list):
            continue
        rest = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null" and len(o) == 1)]
        if len(rest) == 1 and len(rest) != len(options) and isinstance(rest[0], dict):
            merged = {k: v for k, v in node.items() if k != key}
            return {**rest[0], **merged}
    return node


# ---------------------------------------------------------------------------------------------
# Content conversion


def _b64_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data) * 3 // 4


def _size_text(n: int) -> str:
    return f"{n} bytes" if n < 10_000 else f"{n / 1024:.1f} KiB"


def convert_blocks(blocks: list[Any]) -> tuple[list[str], list[ImageData]]:
    """Text parts and images from MCP content blocks (tool results and prompt messages)."""
    texts: list[str] = []
    images: list[ImageData] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "image":
            mime = getattr(block, "mime_type", "") or ""
            if mime in IMAGE_TYPES:
                images.append(ImageData(media_type=mime, data=block.data))
                texts.append(f"[image: {mime}]")
            else:
                texts.append(f"[image: {mime or 'unknown type'}, {_size_text(_b64_size(block.data))}]")
        elif kind == "audio":
            texts.append(f"[audio: {block.mime_type}, {_size_text(_b64_size(block.data))}]")
        elif kind == "resource_link":
            texts.append(f"[resource: {block.uri}{' ' + block.name if getattr(block, 'name', None) else ''}]")
        elif kind == "resource":
            t, i = convert_resource_contents([block.resource])
            texts.extend(t)
            images.extend(i)
        elif kind is not None:
            texts.append(f"[{kind} content]")
    return texts, images


def convert_resource_contents(contents: list[Any]) -> tuple[list[str], list[ImageData]]:
    """Text returned, images attached, other binary summarised by MIME type and size."""
    texts: list[str] = []
    images: list[ImageData] = []
    for item in contents:
        mime = getattr(item, "mime_type", None) or ""
        text = getattr(item, "text", None)
        if text is not None:
            texts.append(text)
            continue
        blob = getattr(item, "blob", None) or ""
        if mime in IMAGE_TYPES:
            images.append(ImageData(media_type=mime, data=blob))
            texts.append(f"[image: {item.uri} ({mime}, {_size_text(_b64_size(blob))})]")
        else:
            texts.append(f"[binary: {item.uri} ({mime or 'unknown type'}, {_size_text(_b64_size(blob))})]")
    return texts, images


def call_result_to_tool_result(result: Any, display: str) -> ToolResult:
    texts, images = convert_blocks(list(getattr(result, "content", None) or []))
    structured = getattr(result, "structured_content", None)
    if structured is not None and not any(t.strip() for t in texts):
        texts.append(json.dumps(structured, ensure_ascii=False))
    content = cap_text("\n".join(texts)) if texts else "(no output)"
    if getattr(result, "is_error", False):
        first = content.splitlines()[0][:200] if content else "error"
        return ToolResult(content=content, is_error=True, summary=first, images=tuple(images))
    first_line = content.splitlines()[0][:120] if content else ""
    return ToolResult(content=content, summary=f"{display}: {first_line}", images=tuple(images))


# ---------------------------------------------------------------------------------------------
# The manager as the tools see it


class McpBackend(Protocol):
    async def call_tool(self, server: str, raw_name: str, arguments: dict[str, Any]) -> ToolResult: ...

    async def list_resources_text(self, server: str | None) -> ToolResult: ...

    async def read_resource(self, server: str, uri: str) -> ToolResult: ...

    def search_deferred(self, query: str, limit: int) -> list[McpToolAdapter]: ...


class McpToolArgs(ToolArgs):
    """Arguments of an MCP tool: whatever the server's schema says; the server validates."""

    model_config = ConfigDict(extra="allow")


class McpToolAdapter(Tool):
    """One server tool as a Mermaid tool. Instances carry their own name and schema."""

    Args = McpToolArgs
    category = "mcp"
    name: str  # type: ignore[misc]  # per instance, not per class
    description: str  # type: ignore[misc]

    def __init__(
        self,
        backend: McpBackend,
        server: str,
        raw_name: str,
        name: str,
        description: str,
        input_schema: dict[str, Any] | None,
        *,
        read_only_hint: bool = False,
        deferred: bool = False,
    ) -> None:
        self.backend = backend
        self.server = server
        self.raw_name = raw_name
        self.name = name
        self.description = description or f"Tool {raw_name} of MCP server {server}."
        self.input_schema = normalize_schema(input_schema)
        #: the server's `annotations.readOnlyHint`: untrusted, it can only keep a read a read
        self.read_only_hint = read_only_hint
        self.deferred = deferred
        #: set by the catalog: the note a deferred tool called unloaded gets (`deferred.py`)
        self.after_call: Callable[[McpToolAdapter, dict[str, Any], ToolResult], ToolResult] | None = None
        self._spec: ToolSpec | None = None

    def spec(self) -> ToolSpec:
        # made once: the same spec object every turn is encoded into the requests once
        if self._spec is None:
            self._spec = ToolSpec(name=self.name, description=self.description, input_schema=self.input_schema)
        return self._spec

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        arguments = args.model_dump() if hasattr(args, "model_dump") else dict(args or {})
        result = await self.backend.call_tool(self.server, self.raw_name, arguments)
        return self.after_call(self, arguments, result) if self.after_call is not None else result


class ToolSearchArgs(ToolArgs):
    query: str = Field(description="Words to look for in tool names and descriptions.")
    limit: int = Field(default=5, ge=1, le=20, description="Most tools to return.")


class ToolSearch(Tool):
    name = "tool_search"
    description = (
        "Search the tools of connected MCP servers that are not loaded yet, by name and description. "
        "Matching tools become available to call from the next step on."
    )
    Args = ToolSearchArgs
    # searches the list Mermaid already holds; no server is contacted
    category = "session"
    read_only_hint: ClassVar[bool] = True

    def __init__(self, backend: McpBackend) -> None:
        self.backend = backend

    async def run(self, args: ToolSearchArgs, ctx: ToolContext) -> ToolResult:
        found = self.backend.search_deferred(args.query, args.limit)
        if not found:
            return ToolResult(content=f"No MCP tools match {args.query!r}.", summary="no matching tools")
        lines = [f"{len(found)} tool(s) now available:"]
        for tool in found:
            lines.append(f"- {tool.name}: {tool.description.splitlines()[0] if tool.description else ''}")
        return ToolResult(
            content="\n".join(lines),
            summary=f"{len(found)} tool(s): " + ", ".join(t.name for t in found),
            metadata={"promoted": [t.name for t in found]},
        )


def score(query: str, tool: McpToolAdapter) -> int:
    words = [w for w in re.split(r"[^a-z0-9]+", query.lower()) if w]
    if not words:
        return 0
    name = f"{tool.server} {tool.raw_name} {tool.name}".lower()
    desc = tool.description.lower()
    if query.strip() in (tool.name, tool.raw_name):
        return 1000
    total = 0
    for word in words:
        if word in name:
            total += 3
        if word in desc:
            total += 1
    return total


class ListResourcesArgs(ToolArgs):
    server: str | None = Field(default=None, description="Only this MCP server (default: all).")


class ListMcpResources(Tool):
    name = "list_mcp_resources"
    description = "List the resources (documents, files, data) offered by connected MCP servers."
    Args = ListResourcesArgs
    category = "mcp"
    read_only_hint: ClassVar[bool] = True

    def __init__(self, backend: McpBackend) -> None:
        self.backend = backend

    async def run(self, args: ListResourcesArgs, ctx: ToolContext) -> ToolResult:
        return await self.backend.list_resources_text(args.server)


class ReadResourceArgs(ToolArgs):
    server: str = Field(description="The MCP server offering the resource.")
    uri: str = Field(description="The resource URI, as listed by list_mcp_resources.")


class ReadMcpResource(Tool):
    name = "read_mcp_resource"
    description = "Read one resource of a connected MCP server by URI."
    Args = ReadResourceArgs
    category = "mcp"
    read_only_hint: ClassVar[bool] = True

    def __init__(self, backend: McpBackend) -> None:
        self.backend = backend

    async def run(self, args: ReadResourceArgs, ctx: ToolContext) -> ToolResult:
        return await self.backend.read_resource(args.server, args.uri)


def cap_resource_text(text: str) -> str:
    return cap_text(text, RESOURCE_OUTPUT_CHARS)
