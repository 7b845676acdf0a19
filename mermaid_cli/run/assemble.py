"""Building a run's parts from its settings: the tool registry (built-in tools, spec-cached), the
system prompt, the policy gate with its reviewer, and the MCP servers. Each builder takes what it
needs explicitly, so the runner only drives parts and a child run (subagents) can be built the
same way.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mermaid_cli import __version__
from mermaid_cli.core import events as ev
from mermaid_cli.core.errors import UsageError
from mermaid_cli.core.types import ModelTurn, Usage

if TYPE_CHECKING:
    from mermaid_cli.config.loader import Settings
    from mermaid_cli.integrations.mcp.manager import McpManager
    from mermaid_cli.policy.gate import PolicyGate
    from mermaid_cli.providers.base import Provider
    from mermaid_cli.tools.base import ToolRegistry


def build_registry(settings: Settings, env: Mapping[str, str], *, interactive: bool) -> ToolRegistry:
    """The built-in tools a run offers under `settings` (MCP tools join once servers start)."""
    from mermaid_cli.tools.base import ToolRegistry
    from mermaid_cli.tools.catalog_computer import computer_tools
    from mermaid_cli.tools.catalog_files import file_tools
    from mermaid_cli.tools.catalog_longrun import longrun_tools
    from mermaid_cli.tools.catalog_shell import shell_tools
    from mermaid_cli.tools.catalog_web import omitted_web_tools, web_tools

    network = settings.safety.network != "deny"
    tools = [*file_tools(), *shell_tools()]
    tools += web_tools(settings, env, network_allowed=network)
    tools += longrun_tools(interactive=interactive, memory_enabled=settings.memory.enabled)
    absent = omitted_web_tools(settings, env, network_allowed=network)
    screen_tools, screen_absent = computer_tools(settings, env)
    return ToolRegistry([*tools, *screen_tools], absent={**absent, **screen_absent})


def cached_registry(settings: Settings, env: Mapping[str, str], *, interactive: bool) -> ToolRegistry:
    """The built-in tools. With a warm spec cache the tool modules load at the first tool call,
    off the path to the first request."""
    from mermaid_cli.config.loader import data_dir
    from mermaid_cli.tools import spec_cache

    def build() -> ToolRegistry:
        return build_registry(settings, env, interactive=interactive)

    if settings.tools.computer:
        return build()  # its spec carries the size of the screen it found: never cached
    try:
        key = spec_cache.cache_key(settings, env, interactive=interactive)
    except OSError:
        return build()
    cache_dir = data_dir(env) / "cache" / "tool-specs"
    cached = spec_cache.load(cache_dir, key)
    if cached is None and (cached := spec_cache.load(spec_cache.SHARED_DIR, key)) is not None:
        spec_cache.adopt(spec_cache.SHARED_DIR, cache_dir, key)
    if cached is not None:
        return spec_cache.CachedRegistry(cached[0], cached[1], build)
    registry = build()
    spec_cache.save(cache_dir, key, registry)
    spec_cache.save(spec_cache.SHARED_DIR, key, registry)
    return registry


def read_text_file(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {what} {path}: {getattr(exc, 'strerror', None) or exc}") from None


def system_prompt(
    settings: Settings,
    env: Mapping[str, str],
    *,
    tools: list[str],
    project_root: Path,
    interactive: bool,
    replace: str | None = None,
    replace_file: str | None = None,
    append: str | None = None,
    append_file: str | None = None,
) -> str:
    """The run's system prompt: the built one (tools, safety, project instructions, memory index),
    or `--system-prompt[-file]` instead of it, plus `--append-system-prompt[-file]`."""
    if replace_file is not None:
        base = read_text_file(replace_file, "--system-prompt-file")
    elif replace is not None:
        base = replace
    else:
        from mermaid_cli.config.loader import user_config_dir
        from mermaid_cli.run.instructions import load_project_instructions
        from mermaid_cli.run.prompt import build_system_prompt
        from mermaid_cli.tools.memory import memory_index

        user_dir = user_config_dir(env)
        index = ""
        if settings.memory.enabled:
            index = memory_index(project_root, user_dir / "memory", cap=settings.memory.index_cap_bytes)
        base = build_system_prompt(
            tools=tools,
            safety_mode=settings.safety.mode,
            project_root=project_root,
            instructions=load_project_instructions(project_root, user_dir),
            memory_index=index,
            interactive=interactive,
            os_name=platform.system() or "unknown OS",
        )
    extra = read_text_file(append_file, "--append-system-prompt-file") if append_file is not None else append
    return f"{base.rstrip()}\n\n{extra.strip()}\n" if extra else base


class RecordingReviewer:
    """The reviewer's model calls go into --record too, so a replay answers them in order."""

    def __init__(self, provider: Provider, on_turn: Callable[[], Callable[[ModelTurn], None] | None]) -> None:
        self._provider = provider
        self._on_turn = on_turn  # read at call time: the recorder exists once the agent does
        self.model_id = getattr(provider, "model_id", "")

    async def turn(self, request: Any, sink: Any) -> ModelTurn:
        turn = await self._provider.turn(request, sink)
        record = self._on_turn()
        if record is not None:
            record(turn)
        return turn

    async def aclose(self) -> None:
        pass  # the provider it wraps is closed by whoever opened it


def policy_gate(
    settings: Settings,
    *,
    project_root: Path,
    reviewer: RecordingReviewer,
    emit: Callable[[Any], None],
    note: Callable[[str], None],
    redact: Callable[[str], str],
    interactive: bool,
    user_request: Callable[[], str],
    untrusted_content: Callable[[], bool],
    on_usage: Callable[[Usage], None],
) -> PolicyGate:
    """The gate every tool call of the run passes (DESIGN.md §4)."""
    from mermaid_cli.policy.gate import PolicyGate, tty_approver

    return PolicyGate(
        settings=settings,
        project_root=project_root,
        emit=emit,
        interactive=interactive,
        allow_untrusted=settings.safety.allow_untrusted_headless_tools,
        reviewer=reviewer,
        user_request=user_request,
        hooks=list(settings.hooks.before_tool_use),
        redact=redact,
        approver=tty_approver if interactive else None,
        untrusted_content=untrusted_content,
        on_usage=on_usage,
        note=note,
    )


async def start_mcp(
    settings: Settings, registry: ToolRegistry, *, note: Callable[[str], None]
) -> tuple[McpManager, list[ev.Error]]:
    """Start every configured MCP server concurrently and offer their tools; a server that fails is
    reported as an `error` event (returned, to be emitted after `session_started`), not fatal.
    The caller closes the manager."""
    from mermaid_cli.integrations.mcp.manager import McpManager

    manager = McpManager(
        settings.mcp_servers,
        defer_tools=settings.mcp_defer_tools,
        client_version=__version__,
        progress=note,
    )
    try:
        await manager.start()
    except BaseException:
        await manager.aclose()
        raise
    registry.add_dynamic(manager)
    errors = [ev.Error(message=f"MCP server {name}: {message}", code="mcp_server") for name, message in manager.errors()]
    return manager, errors
