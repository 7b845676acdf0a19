"""`mermaid tools list`: every built-in and MCP tool with its policy category, the gate's decision
for it in the effective safety mode, and whether this run would offer it (and why not)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from pydantic import BaseModel

if TYPE_CHECKING:
    from mermaid_cli.config.loader import Settings
    from mermaid_cli.tools.base import Tool
    from mermaid_cli.tools.filters import ToolFilter

#: built-ins a run may leave out before any instance exists (their category, for the listing)
ABSENT_CATEGORIES = {"web_fetch": "web", "web_search": "web", "computer": "computer"}
CONDITIONAL = {
    "ask_user_question": "offered only with a person at a terminal (never headless)",
    "memory": "off: `[memory] enabled = false`",
}


class ToolRow(BaseModel):
    name: str
    source: str  # "builtin" or "mcp:SERVER"
    category: str
    decision: str  # allow | ask | review | deny, in the effective mode, headless
    reason: str
    status: str  # offered | deferred | disabled | absent
    detail: str | None = None


@click.group("tools")
def tools_group() -> None:
    """List the tools a run can offer."""


@tools_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON array on stdout.")
@click.option("--safety", type=click.Choice(["read_only", "ask", "auto", "full_access"]), help="Safety mode.")
@click.option("--no-network", is_flag=True, help="As a run with --no-network.")
@click.option("--no-mcp", is_flag=True, help="Do not start the configured MCP servers.")
@click.option("-m", "--model", help="Model id (render_image needs a vision model); default: the config's.")
@click.option("--profile", help="Apply [profiles.NAME].")
@click.option(
    "-c", "--config", "config_overrides", multiple=True, metavar="KEY=VALUE", help="Config override."
)
@click.option("-p", "--path", "path", default=".", metavar="DIR", help="Project directory.")
def list_cmd(
    as_json: bool,
    safety: str | None,
    no_network: bool,
    no_mcp: bool,
    model: str | None,
    profile: str | None,
    config_overrides: tuple[str, ...],
    path: str,
) -> None:
    """Every built-in and MCP tool: category, decision in the current mode, status."""
    from mermaid_cli.config.loader import load_settings
    from mermaid_cli.core.errors import ConfigError

    root = Path(path).resolve()
    if not root.is_dir():
        click.echo(f"mermaid: --path {path}: not a directory", err=True)
        sys.exit(2)
    flags = {"safety.mode": safety, "safety.network": "deny" if no_network else None}
    try:
        loaded = load_settings(
            project_root=root, profile=profile, overrides=list(config_overrides), flags=flags
        )
    except ConfigError as exc:
        click.echo(f"mermaid: {exc.message}", err=True)
        sys.exit(2)
    for warning in loaded.warnings:
        click.echo(f"mermaid: {warning}", err=True)
    settings = loaded.settings
    rows = builtin_rows(settings, root, model or settings.model)
    if settings.mcp_servers and not no_mcp:
        rows += asyncio.run(mcp_rows(settings, root))
    if as_json:
        click.echo(json.dumps([r.model_dump() for r in rows], indent=2))
        return
    width = max(len(r.name) for r in rows)
    click.echo(f"safety mode: {settings.safety.mode} (decisions as a headless run makes them)")
    for r in rows:
        detail = f"  ({r.detail})" if r.detail else ""
        click.echo(f"{r.name:<{width}}  {r.category:<10} {r.decision:<6}  {r.status}{detail}")


def decision_for(
    settings: Settings, root: Path, name: str, category: str, read_hint: bool
) -> tuple[str, str]:
    """The gate's verdict for a call of the tool with no arguments (a shell command is
    classified per call: this is the verdict for an unclassified one)."""
    from mermaid_cli.policy.engine import evaluate
    from mermaid_cli.policy.requests import request_for_call

    request = request_for_call(name, category, {}, project_root=root, mcp_read_only_hint=read_hint)  # type: ignore[arg-type]
    outcome = evaluate(
        request,
        settings.safety,
        interactive=False,
        allow_untrusted=settings.safety.allow_untrusted_headless_tools,
        project_root=root,
    )
    verdict = {"classify": "review"}.get(outcome.verdict, outcome.verdict)
    if outcome.blocked:
        verdict = "deny"
    reason = outcome.reason or ""
    if category in ("shell", "process"):
        reason = f"{reason}; each command is classified on its own"
    return verdict, reason


def _row(settings: Settings, root: Path, tool_name: str, source: str, category: str, hint: bool) -> ToolRow:
    decision, reason = decision_for(settings, root, tool_name, category, hint)
    return ToolRow(
        name=tool_name, source=source, category=category, decision=decision, reason=reason, status="offered"
    )


def builtin_rows(settings: Settings, root: Path, model: str | None = None) -> list[ToolRow]:
    from mermaid_cli.providers.resolve import model_facts
    from mermaid_cli.run.assemble import build_registry
    from mermaid_cli.tools.filters import ToolFilter

    env = dict(os.environ)
    vision = model_facts(model, settings).vision if model else False
    offered = build_registry(settings, env, interactive=False, vision=vision)
    everything = settings.model_copy(deep=True)
    everything.tools.enabled, everything.tools.disabled, everything.tools.categories = None, [], {}
    everything.memory.enabled = True
    full = build_registry(everything, env, interactive=True)
    tool_filter = ToolFilter(settings.tools)
    names: dict[str, str] = {t.name: t.category for t in full.current()}
    for name in full.absent:
        names.setdefault(name, ABSENT_CATEGORIES.get(name, "read"))
    rows = []
    for name, own in names.items():
        category = settings.tools.categories.get(name, own)
        row = _row(settings, root, name, "builtin", category, False)
        refusal = tool_filter.refusal(name)
        if refusal is not None:
            row.status, row.detail = "disabled", refusal
        elif name in offered:
            row.status = "offered"
        else:
            row.status = "absent"
            row.detail = offered.absent.get(name) or full.absent.get(name) or CONDITIONAL.get(name)
            if name == "render_image" and not model:
                row.detail = "offered only to models that accept images; give --model to check one"
        rows.append(row)
    return rows


async def mcp_rows(settings: Settings, root: Path) -> list[ToolRow]:
    from mermaid_cli.integrations.mcp.manager import McpManager
    from mermaid_cli.tools.filters import ToolFilter

    manager = McpManager(settings.mcp_servers, defer_tools=settings.mcp_defer_tools)
    try:
        await manager.start()
        tool_filter = ToolFilter(settings.tools)
        offered = {t.name for t in manager.current_tools()}
        rows = []
        for tool in manager.all_tools():
            rows.append(_mcp_row(settings, root, tool, tool_filter, tool.name in offered))
        for name, message in manager.errors():
            rows.append(
                ToolRow(
                    name=f"mcp__{name}__*",
                    source=f"mcp:{name}",
                    category="mcp",
                    decision="-",
                    reason="",
                    status="absent",
                    detail=message,
                )
            )
        return rows
    finally:
        await manager.aclose()


def _mcp_row(settings: Settings, root: Path, tool: Tool, tool_filter: ToolFilter, offered: bool) -> ToolRow:
    category = settings.tools.categories.get(tool.name, tool.category)
    server = getattr(tool, "server", None)
    row = _row(
        settings,
        root,
        tool.name,
        f"mcp:{server}" if server else "mcp",
        category,
        bool(getattr(tool, "read_only_hint", False)),
    )
    refusal = tool_filter.refusal(tool.name)
    if refusal is not None:
        row.status, row.detail = "disabled", refusal
    elif not offered and getattr(tool, "deferred", False):
        row.status, row.detail = "deferred", "schema sent after tool_search or load_tool finds it"
    return row
