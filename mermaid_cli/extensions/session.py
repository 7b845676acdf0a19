"""A run's extensions, gathered once at its start: the enabled plugins, the skills, the prompt
commands, the plugins' MCP servers, agent types and hooks, and the lifecycle observer.

`load_for_run` is the runner's single entry point; each other method is one call site in
`run/runner.py` (see docs/extensions.md). Nothing here raises on what a repository or a plugin
holds: problems are warnings (stderr) or doctor entries.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mermaid_cli.config.loader import Settings, find_git_root
from mermaid_cli.config.sections.hooks import LIFECYCLE_EVENTS, HookSpec
from mermaid_cli.extensions.locations import lock_path, project_dir, user_dir

if TYPE_CHECKING:
    from mermaid_cli.extensions.bundles import PluginAgentType
    from mermaid_cli.extensions.commands import CommandRoot, CommandSet
    from mermaid_cli.extensions.lifecycle import LifecycleObserver
    from mermaid_cli.extensions.plugins import LoadedPlugin
    from mermaid_cli.extensions.skill_tools import ProjectSkillReads, UntrustedFlag
    from mermaid_cli.extensions.skills import SkillRoot, SkillSet
    from mermaid_cli.run.output import Output
    from mermaid_cli.tools.base import ToolRegistry


@dataclass
class RunExtensions:
    """What extensions add to one run. `skills` and `commands` are None when nothing could provide
    them (no plugin, no skill or command directory): the extension modules are then never imported,
    which keeps them off the path to the first request (issue 23)."""

    plugins: list[LoadedPlugin] = field(default_factory=list)
    skills: SkillSet | None = None
    commands: CommandSet | None = None
    agent_types: list[PluginAgentType] = field(default_factory=list)
    observer: LifecycleObserver | None = None
    note: Callable[[str], None] = lambda _text: None
    reads: ProjectSkillReads | None = None

    @property
    def plugin_names(self) -> list[str]:
        return [p.name for p in self.plugins]

    @property
    def skill_count(self) -> int:
        return len(self.skills.skills) if self.skills is not None else 0

    def expand_prompt(self, prompt: str) -> str:
        """A leading `/name args` expanded (the warning for an unknown name goes to stderr)."""
        if self.commands is None:
            if not prompt.startswith("/"):
                return prompt
            from mermaid_cli.extensions.commands import CommandSet

            self.commands = CommandSet()  # none defined: what a `/name` gets is the warning
        text, warning = self.commands.expand(prompt)
        if warning:
            self.note(f"warning: {warning}")
        return text

    def add_tools(self, registry: ToolRegistry) -> None:
        """Offer `skill` and `skill_search` when there are skills."""
        if self.skills is not None and self.skills.skills:
            from mermaid_cli.extensions.skill_tools import SkillTools

            registry.add_dynamic(SkillTools(self.skills))

    def track(self, stats: UntrustedFlag) -> None:
        """The run's stats, which a `read_file` of a project skill marks untrusted."""
        if self.reads is not None:
            self.reads.track(stats)

    def watch(self, emit: Callable[[Any], None]) -> Callable[[Any], None]:
        """`emit`, also feeding the lifecycle observer and the project-skill read tracker."""
        if self.observer is not None:
            emit = self.observer.watch(emit)
        reads = self.reads
        if reads is None or not reads.active:
            return emit
        inner = emit

        def watched(event: Any) -> None:
            reads.on_event(event)  # before the observers: `session_end` blocks
            inner(event)

        return watched

    def system_prompt(self, base: str) -> str:
        """`base` with the skills index appended (byte-stable: the same skills give the same bytes)."""
        index = self.skills.index() if self.skills is not None else ""
        return f"{base.rstrip()}\n\n{index}\n" if index else base


def skill_roots(project_root: Path, env: Mapping[str, str], plugins: list[LoadedPlugin]) -> list[SkillRoot]:
    from mermaid_cli.extensions.skills import SkillRoot

    root = find_git_root(project_root) or project_root
    roots = [SkillRoot(user_dir(env, "skills"), "user")]
    for plugin in plugins:
        for rel in plugin.manifest.skills:
            path = plugin.audit.paths[("skills", rel)]
            single = path.is_file() or (path / "SKILL.md").exists()
            roots.append(SkillRoot(path, "plugin", jail=plugin.root, plugin=plugin.name, single=single))
    roots.append(SkillRoot(project_dir(root, "skills"), "project", jail=root))  # last: see skills._RANK
    return roots


def command_roots(
    project_root: Path, env: Mapping[str, str], plugins: list[LoadedPlugin]
) -> list[CommandRoot]:
    from mermaid_cli.extensions.commands import CommandRoot

    root = find_git_root(project_root) or project_root
    roots = [CommandRoot("user", user_dir(env, "commands"))]
    for plugin in plugins:
        files = tuple(plugin.audit.paths[("prompts", rel)] for rel in plugin.manifest.prompts)
        roots.append(CommandRoot(f"plugin:{plugin.name}", files=files, jail=plugin.root))
    # last: the first root to define a name wins, and a pull request must not replace the
    # operator's own command (`mermaid exec "/review"` in CI)
    roots.append(CommandRoot("project", project_dir(root, "commands"), jail=root))
    return roots


def configured_agent_types(settings: Settings) -> list[str]:
    """Names of `[agents.types.NAME]` in the config (another branch adds that section; until it
    lands there are none)."""
    agents = getattr(settings, "agents", None)
    types = getattr(agents, "types", None)
    return sorted(types) if isinstance(types, dict) else []


def load_for_run(
    settings: Settings, project_root: Path, env: Mapping[str, str], *, note: Callable[[str], None]
) -> RunExtensions:
    """Everything extensions add to this run. Folds the plugins' MCP servers into
    `settings.mcp_servers` and their hooks into `settings.hooks.before_tool_use` (the gate reads
    them from there); the user's own servers win a name clash."""
    if _nothing_to_load(settings, project_root, env):
        return RunExtensions(note=note)
    from mermaid_cli.extensions.bundles import contributions
    from mermaid_cli.extensions.commands import discover as discover_commands
    from mermaid_cli.extensions.lifecycle import LifecycleObserver
    from mermaid_cli.extensions.plugins import enabled_plugins
    from mermaid_cli.extensions.skill_tools import ProjectSkillReads
    from mermaid_cli.extensions.skills import discover

    plugins, warnings = enabled_plugins(settings, env)
    skills = discover(
        skill_roots(project_root, env, plugins), project_root=find_git_root(project_root) or project_root
    )
    commands = discover_commands(command_roots(project_root, env, plugins))
    bundle = contributions(
        plugins, configured_servers=settings.mcp_servers, configured_types=configured_agent_types(settings)
    )
    if bundle.servers:
        settings.mcp_servers = {**settings.mcp_servers, **bundle.servers}
    if bundle.hooks:
        settings.hooks.before_tool_use = [*settings.hooks.before_tool_use, *bundle.hooks]
    for warning in [*warnings, *bundle.warnings, *commands.warnings]:
        note(f"warning: {warning}")
    if skills.skipped:
        note(f"warning: {len(skills.skipped)} skill file(s) skipped; `mermaid doctor` says why")
    observers: dict[str, list[HookSpec]] = {
        event: [*settings.hooks.for_event(event), *bundle.hooks] for event in LIFECYCLE_EVENTS
    }
    observer = LifecycleObserver(
        observers,
        note,
        project_root=project_root,
        plugins=[p.name for p in plugins],
        skills=len(skills.skills),
    )
    reads = ProjectSkillReads(skills, find_git_root(project_root) or project_root)
    return RunExtensions(plugins, skills, commands, bundle.agent_types, observer, note, reads)


def _nothing_to_load(settings: Settings, project_root: Path, env: Mapping[str, str]) -> bool:
    """No plugin can be enabled (no lock file, none named in the config), no skill or command
    directory exists and no lifecycle hook is configured: a run without extensions."""
    if settings.plugins.enabled or lock_path(env).exists():
        return False
    if any(settings.hooks.for_event(event) for event in LIFECYCLE_EVENTS):
        return False
    root = find_git_root(project_root) or project_root
    kinds = ("skills", "commands")
    places = [project_dir(root, kind) for kind in kinds] + [user_dir(env, kind) for kind in kinds]
    return not any(os.path.lexists(place) for place in places)


def attach_to_run(
    out: Output, settings: Settings, project_root: Path, env: Mapping[str, str]
) -> RunExtensions:
    """`load_for_run`, with warnings on the run's stderr and the lifecycle observer watching every
    event the run emits from now on (the runner's one call)."""
    ext = load_for_run(settings, project_root, env, note=out.note)
    out.emit = ext.watch(out.emit)  # type: ignore[method-assign,assignment]
    return ext


def plugin_agent_types(settings: Settings, env: Mapping[str, str]) -> tuple[list[PluginAgentType], list[str]]:
    """The enabled plugins' agent types (a config type of the same name wins) and the warnings:
    what the `agent` tool's type table folds in."""
    from mermaid_cli.extensions.bundles import contributions
    from mermaid_cli.extensions.plugins import enabled_plugins

    plugins, warnings = enabled_plugins(settings, env)
    bundle = contributions(
        plugins, configured_servers=settings.mcp_servers, configured_types=configured_agent_types(settings)
    )
    return bundle.agent_types, [*warnings, *bundle.warnings]


def doctor_report(
    settings: Settings, project_root: Path, env: Mapping[str, str]
) -> list[tuple[str, Literal["ok", "warn"], str]]:
    """(check name, status, detail) lines for `mermaid doctor`: plugins, skills, skipped files."""
    from mermaid_cli.extensions.plugins import enabled_plugins
    from mermaid_cli.extensions.skills import discover

    plugins, warnings = enabled_plugins(settings, env)
    skills = discover(
        skill_roots(project_root, env, plugins), project_root=find_git_root(project_root) or project_root
    )
    out: list[tuple[str, Literal["ok", "warn"], str]] = [
        (
            "plugins",
            "ok",
            f"{len(plugins)} enabled" + (f": {', '.join(p.name for p in plugins)}" if plugins else ""),
        )
    ]
    out += [("plugins", "warn", w) for w in warnings]
    by_origin: dict[str, int] = {}
    for skill in skills.skills:
        by_origin[skill.origin] = by_origin.get(skill.origin, 0) + 1
    detail = ", ".join(f"{n} {origin}" for origin, n in sorted(by_origin.items()))
    out.append(("skills", "ok", f"{len(skills.skills)} found" + (f" ({detail})" if detail else "")))
    out += [("skills", "warn", f"skipped {s.path}: {s.reason}") for s in skills.skipped]
    return out
