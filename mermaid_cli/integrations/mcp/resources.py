"""MCP resources as text for the model: the listing behind `list_mcp_resources` and the reads
behind `read_mcp_resource`, each call bounded by the run's MCP tool timeout."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mermaid_cli.core.types import ToolResult
from mermaid_cli.integrations.mcp.server import ServerHandle, leaf_message, list_all
from mermaid_cli.integrations.mcp.tools import cap_resource_text, convert_resource_contents


def not_available(server: str, available: Sequence[ServerHandle]) -> ToolResult:
    names = ", ".join(s.name for s in available) or "none"
    return ToolResult.error(f"no ready MCP server {server!r} with resources; available: {names}")


async def list_resources_text(
    available: Sequence[ServerHandle], server: str | None, timeout: float
) -> ToolResult:
    """A JSON list with one object per resource (`server`, `uri`, `name`, `description`,
    `mimeType`) and per template (`uriTemplate` instead of `uri`) of the ready servers (or of
    `server` only); a server that fails is `{"server", "error"}`."""
    servers = list(available)
    if server is not None:
        servers = [s for s in servers if s.name == server]
        if not servers:
            return not_available(server, available)
    entries: list[dict[str, Any]] = []
    count = 0
    for srv in servers:
        try:
            resources, templates = await _list_server(srv, timeout)
        except Exception as exc:  # noqa: BLE001 - one server's failure is an entry for the model
            entries.append({"server": srv.name, "error": leaf_message(exc)})
            continue
        count += len(resources)
        entries.extend(_resource_entry(srv.name, r) for r in resources)
        entries.extend(_template_entry(srv.name, t) for t in templates)
    text = json.dumps(entries, indent=1, ensure_ascii=False)
    return ToolResult(content=cap_resource_text(text), summary=f"{count} resource(s)")


async def _list_server(srv: ServerHandle, timeout: float) -> tuple[list[Any], list[Any]]:
    import anyio

    with anyio.fail_after(timeout):
        resources = await list_all(srv.client.list_resources, "resources")
        try:
            templates = await list_all(srv.client.list_resource_templates, "resource_templates")
        except Exception:  # noqa: BLE001 - templates are optional
            templates = []
    return resources, templates


def _resource_entry(server: str, resource: Any) -> dict[str, Any]:
    return {
        "server": server,
        "uri": str(resource.uri),
        "name": resource.name,
        "description": resource.description,
        "mimeType": resource.mime_type,
    }


def _template_entry(server: str, template: Any) -> dict[str, Any]:
    return {
        "server": server,
        "uriTemplate": str(template.uri_template),
        "name": template.name,
        "description": getattr(template, "description", None),
        "mimeType": getattr(template, "mime_type", None),
    }


async def read_resource(srv: ServerHandle, uri: str, timeout: float) -> ToolResult:
    """The contents of `uri` on the ready, resources-capable server `srv`: text capped, images kept."""
    import anyio

    try:
        with anyio.fail_after(timeout):
            result = await srv.client.read_resource(uri)
    except TimeoutError:
        return ToolResult.error(f"reading {uri} from {srv.name} timed out after {timeout:g} s")
    except Exception as exc:  # noqa: BLE001
        return ToolResult.error(f"reading {uri} from {srv.name} failed: {leaf_message(exc)}")
    texts, images = convert_resource_contents(list(result.contents))
    content = cap_resource_text("\n".join(texts)) if texts else "(empty resource)"
    return ToolResult(content=content, summary=f"Read {uri} from {srv.name}", images=tuple(images))
