"""A run, assembled from typed parts: `assemble(options) -> RunParts` (the settings, the resolved
model, the tool registry, the policy gate, the session writer, the tool context and the loop), and
the builders it uses: the tool registry (built-in tools, spec-cached), the system prompt, the
policy gate with its reviewer, and the MCP servers. Each builder takes what it needs explicitly,
so the runner only drives parts and a child run (subagents) is built the same way.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mermaid_cli import __version__
from mermaid_cli.core import events as ev
from mermaid_cli.core.errors import UsageError
from mermaid_cli.run.child import NarrowedRegistry
from mermaid_cli.run.gating import run_gate
from mermaid_cli.run.lineage import Lineage, Tree
from mermaid_cli.run.options import ExecOptions, RunIO, check_options, resolve_prompt, wait_for_piped
from mermaid_cli.run.output import Output
from mermaid_cli.run.parts import build_agent, mcp_prompt, open_recorder, resolve_run_model
from mermaid_cli.run.setup import (
    Draft,
    LiveRedactor,
    load_history,
    load_run_settings,
    narrow_settings,
    open_session,
    start_sandbox,
    tool_context,
)
from mermaid_cli.run.subagents import Subagents

if TYPE_CHECKING:
    from mermaid_cli.agent.loop import Agent
    from mermaid_cli.config.loader import Settings
    from mermaid_cli.extensions.session import RunExtensions
    from mermaid_cli.integrations.mcp.manager import McpManager
    from mermaid_cli.policy.gate import PolicyGate
    from mermaid_cli.providers.base import Provider
    from mermaid_cli.providers.resolve import ResolvedModel
    from mermaid_cli.run.lineage import AgentType
    from mermaid_cli.store.sessions import SessionWriter
    from mermaid_cli.tools.base import Tool, ToolContext, ToolRegistry
    from mermaid_cli.tools.spec_cache import GroupTools, ToolGroups


def tool_groups(
    settings: Settings, env: Mapping[str, str], *, interactive: bool, vision: bool = False
) -> ToolGroups:
    """The built-in tools a run offers under `settings`, by load group (a catalog's module or
    modules), each imported only when its loader runs (MCP tools join once servers start);
    `vision`: the model accepts images."""
    from mermaid_cli.tools.catalog_files import FILE_GROUPS
    from mermaid_cli.tools.catalog_shell import SHELL_GROUPS

    network = settings.safety.network != "deny"

    def no_absent(load: Callable[[], list[Tool]]) -> Callable[[], GroupTools]:
        return lambda: (load(), {})

    def web() -> GroupTools:
        from mermaid_cli.tools.catalog_web import omitted_web_tools, web_tools

        return (
            web_tools(settings, env, network_allowed=network),
            omitted_web_tools(settings, env, network_allowed=network),
        )

    def longrun() -> GroupTools:
        from mermaid_cli.tools.catalog_longrun import longrun_tools

        return longrun_tools(interactive=interactive, memory_enabled=settings.memory.enabled), {}

    def images() -> GroupTools:
        from mermaid_cli.tools.render_image import image_tools

        return image_tools(vision=vision)

    def computer() -> GroupTools:
        from mermaid_cli.tools.catalog_computer import computer_tools

        return computer_tools(settings, env)

    return {
        **{name: no_absent(load) for name, load in FILE_GROUPS.items()},
        **{name: no_absent(load) for name, load in SHELL_GROUPS.items()},
        "web": web,
        "longrun": longrun,
        "images": images,
        "computer": computer,
    }


def build_registry(
    settings: Settings, env: Mapping[str, str], *, interactive: bool, vision: bool = False
) -> ToolRegistry:
    """The built-in tools a run offers under `settings`, all loaded, `[tools]` filters applied."""
    from mermaid_cli.tools.filters import ToolFilter
    from mermaid_cli.tools.spec_cache import build

    groups = tool_groups(settings, env, interactive=interactive, vision=vision)
    return build(groups, ToolFilter(settings.tools))[0]


def cached_registry(
    settings: Settings, env: Mapping[str, str], *, interactive: bool, vision: bool = False
) -> ToolRegistry:
    """The built-in tools. With a warm spec cache each tool's catalog loads at its first call,
    off the path to the first request."""
    from mermaid_cli.config.dirs import data_dir
    from mermaid_cli.tools import spec_cache
    from mermaid_cli.tools.filters import ToolFilter

    groups = tool_groups(settings, env, interactive=interactive, vision=vision)
    tool_filter = ToolFilter(settings.tools)
    if settings.tools.computer:
        # its spec carries the size of the screen it found: never cached
        return spec_cache.build(groups, tool_filter)[0]
    try:
        key = spec_cache.cache_key(settings, env, interactive=interactive, vision=vision)
    except OSError:
        return spec_cache.build(groups, tool_filter)[0]
    cache_dir = data_dir(env) / "cache" / "tool-specs"
    # the data dir's entry (where the shared dir, beside the package, cannot be written), else the
    # shared one as it is: a fresh $HOME (CI) reads it there again rather than copying it first
    cached = spec_cache.load(cache_dir, key) or spec_cache.load(spec_cache.SHARED_DIR, key)
    if cached is None:  # the first run after an install: the package's entry, if its sources are these
        shipped = spec_cache.load_shipped(settings, env, interactive=interactive, vision=vision)
        if shipped is not None:
            cached, encoded = shipped
            spec_cache.put(encoded, key, cache_dir, spec_cache.SHARED_DIR)
    if cached is not None:
        return spec_cache.CachedRegistry(cached, groups, tool_filter)
    registry, group_of = spec_cache.build(groups, tool_filter)
    spec_cache.save(cache_dir, key, registry, group_of, spec_cache.SHARED_DIR)
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
    instructions: bool = True,
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
        from mermaid_cli.config.dirs import user_config_dir
        from mermaid_cli.run.instructions import load_project_instructions
        from mermaid_cli.run.prompt import build_system_prompt
        from mermaid_cli.tools.memory import memory_index

        user_dir = user_config_dir(env)
        index = ""
        if settings.memory.enabled and instructions:
            index = memory_index(project_root, user_dir / "memory", cap=settings.memory.index_cap_bytes)
        base = build_system_prompt(
            tools=tools,
            safety_mode=settings.safety.mode,
            project_root=project_root,
            instructions=load_project_instructions(project_root, user_dir) if instructions else "",
            memory_index=index,
            interactive=interactive,
            os_name=platform.system() or "unknown OS",
        )
    extra = read_text_file(append_file, "--append-system-prompt-file") if append_file is not None else append
    return f"{base.rstrip()}\n\n{extra.strip()}\n" if extra else base


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
    errors = [
        ev.Error(message=f"MCP server {name}: {message}", code="mcp_server")
        for name, message in manager.errors()
    ]
    return manager, errors


@dataclass(frozen=True)
class RunParts:
    """One run, assembled: what the runner drives. A subagent's run is built by the same
    `assemble`, from narrowed options."""

    settings: Settings
    project_root: Path
    #: the model as resolved (its facts, price and the secrets it brought) ...
    model: ResolvedModel
    #: ... and the client the loop calls (the resolved one, with the heartbeat around it)
    provider: Provider
    registry: ToolRegistry
    gate: PolicyGate
    session: SessionWriter
    ctx: ToolContext
    agent: Agent
    prompt: str
    #: --output-schema, loaded
    schema: dict[str, Any] | None
    #: the run's time.monotonic()-scale deadline (the injected clock's) and its --timeout
    deadline: float
    timeout: float
    redact: LiveRedactor
    #: this run's children (None: the agent tool is not offered here)
    subagents: Subagents | None = None


async def assemble(
    opts: ExecOptions, io: RunIO, out: Output, draft: Draft, lineage: Lineage | None = None
) -> RunParts:
    """Build every part of a run from its options, in the order that lets each fail early
    (exit 2 before the model is called). `draft` records progress for the runner; `lineage`
    places a subagent's run in its tree (None: the root run)."""
    lineage = lineage or Lineage(tree=Tree())
    draft.tree = lineage.tree
    draft.project_root = check_options(opts, io)
    settings = load_run_settings(opts, io, out, draft)
    assert draft.redactor is not None  # load_run_settings made it
    draft.added_dirs = _added_dirs(opts, io)
    ext = None
    if lineage.terms is None:  # plugins, skills, prompt commands, observers: the root run's
        from mermaid_cli.extensions.session import attach_to_run

        ext = attach_to_run(out, settings, draft.project_root, io.env)
        draft.plugins, draft.skills = ext.plugin_names, ext.skill_count
        lineage.tree.plugin_types = plugin_agent_types(ext)
    if lineage.terms is not None:
        narrow_settings(settings, lineage.terms)
        draft.safety_mode = settings.safety.mode
    schema = None
    if opts.output_schema is not None:
        from mermaid_cli.run.structured import load_schema

        schema = load_schema(io.cwd / opts.output_schema)
    history = load_history(opts, draft.project_root, out, child_session=lineage.session_path)
    draft.session_id = history.session_id
    prompt = resolve_prompt(opts.prompt, await wait_for_piped(io)) if opts.mcp_prompt is None else ""
    if ext is not None and prompt:
        prompt = ext.expand_prompt(prompt)
    deadline = draft.deadline
    assert deadline is not None  # (the settings are loaded)
    model, provider = resolve_run_model(opts, io, out, draft, settings, deadline, lineage.model)
    # A person can be asked only when both ends are a terminal (never in CI).
    interactive = bool(
        io.stdin_is_tty and io.stderr_is_tty and not opts.no_interactive and io.install_signal_handlers
    )
    registry: ToolRegistry = cached_registry(settings, io.env, interactive=interactive, vision=model.vision)
    if lineage.terms is not None:
        allowed = lineage.terms.agent_type.tools
        registry = NarrowedRegistry(
            registry, deny=lineage.deny_tools, allow=frozenset(allowed) if allowed is not None else None
        )
    if ext is not None:
        ext.add_tools(registry)
    subagents = None
    from mermaid_cli.tools.filters import ToolFilter

    # max_depth 0, or `agent` disabled in [tools]: no agent tool, nor its lifecycle actions
    if lineage.depth < settings.agents.max_depth and ToolFilter(settings.tools).refusal("agent") is None:
        subagents = Subagents(opts, io, out, draft, settings, lineage)
        subagents.register(registry)
    mcp = None
    if settings.mcp_servers:
        mcp, errors = await start_mcp(settings, registry, note=out.note)
        draft.cleanups.append(mcp.aclose)
        draft.pending_errors.extend(errors)
    if opts.mcp_prompt is not None:
        prompt = await mcp_prompt(opts, io, mcp)
    draft.tools = registry.names()
    system = system_prompt(
        settings,
        io.env,
        tools=draft.tools,
        project_root=draft.project_root,
        interactive=interactive,
        instructions=lineage.terms is None,  # a child is granted none of them
        replace=opts.system_prompt,
        replace_file=opts.system_prompt_file,
        append=opts.append_system_prompt,
        append_file=opts.append_system_prompt_file,
    )
    if ext is not None:
        system = ext.system_prompt(system)
    writer = open_session(opts, io, history, draft, out)
    if subagents is not None:
        subagents.restore(history.agents)
    recorder = open_recorder(opts, io, draft, model)
    sandbox = start_sandbox(settings, io, draft, out.note)
    ctx = tool_context(
        settings,
        io,
        draft=draft,
        sandbox=sandbox,
        writer=writer,
        out=out,
        interactive=interactive,
        tasks=history.tasks,
    )
    gate = run_gate(settings, io, draft, out, provider, interactive=interactive, prompt=prompt)
    ctx.external_access = gate.external_access
    ctx.path_rules = gate.path_rules
    if ext is not None and ext.observer is not None:
        ctx.checkpoint = ext.observer.checkpointing(ctx.checkpoint)
    ctx.agents = subagents
    agent = draft.agent = build_agent(
        settings,
        io,
        out,
        draft,
        provider=provider,
        registry=registry,
        ctx=ctx,
        gate=gate,
        system=system,
        history=history,
        writer=writer,
        recorder=recorder,
        model=model,
        parent=lineage.parent_agent,
    )
    if ext is not None:
        ext.track(agent.stats)  # a project skill read with read_file marks the run untrusted
    if subagents is not None:
        subagents.deadline = min(deadline, lineage.deadline)
        subagents.checkpoint = ctx.checkpoint
        subagents.model = model
    return RunParts(
        settings=settings,
        project_root=draft.project_root,
        model=model,
        provider=provider,
        registry=registry,
        gate=gate,
        session=writer,
        ctx=ctx,
        agent=agent,
        prompt=prompt,
        schema=schema,
        deadline=deadline,
        timeout=settings.run.timeout,
        redact=draft.redactor,
        subagents=subagents,
    )


def plugin_agent_types(ext: RunExtensions) -> dict[str, AgentType]:
    """The enabled plugins' agent types, as the `agent` tool's type table takes them."""
    from mermaid_cli.run.lineage import AgentType

    return {
        t.name: AgentType(
            t.name,
            f"{t.description} (plugin {t.plugin})",
            t.safety or "full_access",
            tuple(t.tools) if t.tools is not None else None,
            t.preamble,
            t.model,
            t.isolation,
        )
        for t in ext.agent_types
    }


def _added_dirs(opts: ExecOptions, io: RunIO) -> tuple[str, ...]:
    """--add-dir, resolved: inside the project for this run's tasks (security/paths.py)."""
    from mermaid_cli.security.paths import PathRefused, set_added_dirs

    try:
        return set_added_dirs(opts.add_dirs, io.cwd)
    except PathRefused as exc:
        raise UsageError(str(exc)) from None
