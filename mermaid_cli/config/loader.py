"""Settings (pydantic) and the pure, layered `load_settings` (DESIGN.md §5); where the user's config
and data live (`user_config_dir`, `data_dir`).

Layers, later wins: built-in defaults < user file < `[profiles.NAME]` < project file (may only
tighten safety) < `--policy` preset < `-c key.path=TOML` < dedicated flags. Every leaf value
remembers which layer set it (`config show`), and a validation error names that layer's file,
the dotted key and the reason. Reading and merging one layer is `layers`; what the project layer
may not set is `clamp`; `config show`'s view of the result is `effective`.
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mermaid_cli.config.dirs import data_dir as data_dir  # re-exported: `loader.data_dir` callers
from mermaid_cli.config.dirs import user_config_dir
from mermaid_cli.config.flags import ToolRules, apply_tool_rules
from mermaid_cli.config.layers import Layer, copy_tree, find_git_root, merge, nest, parse_override, read_toml
from mermaid_cli.config.sections.agents import AgentsSection
from mermaid_cli.config.sections.base import Section
from mermaid_cli.config.sections.exec import ExecSection
from mermaid_cli.config.sections.hooks import HookSpec, LifecycleHooks
from mermaid_cli.config.sections.longrun import CompactionSection, MemorySection
from mermaid_cli.config.sections.mcp import McpServerSettings
from mermaid_cli.config.sections.models import ModelSettings
from mermaid_cli.config.sections.plugins import PluginsSection
from mermaid_cli.config.sections.providers import PriceSettings, ProviderSettings
from mermaid_cli.config.sections.safety import SafetySettings
from mermaid_cli.config.sections.sandbox import SandboxSection
from mermaid_cli.config.sections.tools import ToolsSection
from mermaid_cli.config.sections.web import WebSettings
from mermaid_cli.core.defaults import empty_list
from mermaid_cli.core.errors import ConfigError


class RunSettings(Section):
    max_turns: int | None = Field(100, ge=1, description="Model calls per run before exit 4.")
    max_tokens: int | None = Field(None, ge=1, description="Whole-run token budget before exit 4.")
    max_cost: float | None = Field(None, gt=0, description="Whole-run cost budget in USD before exit 4.")
    timeout: float = Field(1200, gt=0, description="Whole-run wall clock in seconds before exit 124.")
    max_output_tokens: int | None = Field(
        None, ge=1, description="Per-response output cap sent to the model."
    )


class VerifySettings(Section):
    commands: list[str] = Field(
        default_factory=empty_list, description="Commands that must pass after the model finishes."
    )
    attempts: int = Field(
        2, ge=0, le=20, description="Extra rounds the model gets to fix a failing verify command."
    )
    timeout: float = Field(600, gt=0, description="Seconds each verify command may run.")


class HooksSettings(LifecycleHooks):
    before_tool_use: list[HookSpec] = Field(
        default_factory=empty_list, description="Commands that see each tool call first and may deny or rewrite it."
    )


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    model: str | None = Field(None, description="Default model id, `provider/model`.")
    reasoning: Literal["none", "low", "medium", "high"] | None = Field(
        None, description="Reasoning depth asked of the model."
    )
    run: RunSettings = Field(default_factory=RunSettings)
    safety: SafetySettings = Field(default_factory=SafetySettings)
    exec: ExecSection = Field(default_factory=ExecSection)
    sandbox: SandboxSection = Field(default_factory=SandboxSection)
    verify: VerifySettings = Field(default_factory=VerifySettings)
    compaction: CompactionSection = Field(default_factory=CompactionSection)
    memory: MemorySection = Field(default_factory=MemorySection)
    hooks: HooksSettings = Field(default_factory=HooksSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    mcp_servers: dict[str, McpServerSettings] = Field(default_factory=dict)
    mcp_defer_tools: bool = Field(True, description="Offer MCP tools through one tool_search tool.")
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)
    pricing: dict[str, PriceSettings] = Field(default_factory=dict)
    models: dict[str, ModelSettings] = Field(default_factory=dict)
    tools: ToolsSection = Field(default_factory=ToolsSection)
    plugins: PluginsSection = Field(default_factory=PluginsSection)
    agents: AgentsSection = Field(default_factory=AgentsSection)


@dataclass
class LoadedSettings:
    """The merged settings, which layer set each key, and what loading warned about."""

    settings: Settings
    sources: dict[str, str] = field(default_factory=dict)  # dotted key -> layer source
    warnings: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def _below_project(merged: dict[str, Any]) -> dict[str, Any]:
    """The effective values under the project layer: the defaults with the user layers on top."""
    base: dict[str, Any] = Settings().model_dump(mode="python")

    def over(into: dict[str, Any], layer: dict[str, Any]) -> None:
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                over(into[key], value)
            else:
                into[key] = value

    over(base, copy_tree(merged))
    return base


def load_settings(
    *,
    project_root: Path,
    env: Mapping[str, str] | None = None,
    profile: str | None = None,
    policy: tuple[str, dict[str, Any]] | None = None,
    overrides: list[str] = (),  # type: ignore[assignment]
    flags: dict[str, Any] | None = None,
    tool_rules: ToolRules | None = None,
) -> LoadedSettings:
    """Build the effective Settings from every layer. Pure apart from reading the two config files."""
    env = os.environ if env is None else env
    warnings: list[str] = []
    files: list[str] = []
    layers: list[Layer] = []

    user_path = user_config_dir(env) / "config.toml"
    user = read_toml(user_path)
    profiles: dict[str, Any] = {}
    if user is not None:
        files.append(str(user_path))
        profiles = user.pop("profiles", {}) or {}
        if not isinstance(profiles, dict):
            raise ConfigError("must be a table of tables", source=str(user_path), key="profiles")
        layers.append(Layer("user config", str(user_path), user))
    if profile is not None:
        if profile not in profiles or not isinstance(profiles[profile], dict):
            known = ", ".join(sorted(profiles)) or "none defined"
            raise ConfigError(f"unknown profile {profile!r} (known: {known})", source=str(user_path))
        layers.append(Layer(f"profile {profile}", f"{user_path} [profiles.{profile}]", profiles[profile]))

    root = find_git_root(project_root) or project_root
    project_path = root / ".mermaid" / "config.toml"
    project = read_toml(project_path)

    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for layer in layers:
        merge(merged, layer.data, sources, layer.source)
    if project is not None:
        from mermaid_cli.config.clamp import FLOOR_LEVELS, clamp_project  # only a project file is clamped

        files.append(str(project_path))
        current_mode = (
            merged.get("safety", {}).get("mode", "auto") if isinstance(merged.get("safety"), dict) else "auto"
        )
        safety_value = merged.get("safety")
        safety_so_far: dict[str, Any] = safety_value if isinstance(safety_value, dict) else {}
        floors = {k: str(safety_so_far.get(k, "auto")) for k in ("external_writes", "system_installs")}
        floors = {k: v if v in FLOOR_LEVELS else "auto" for k, v in floors.items()}
        clamped = clamp_project(
            project, current_mode, str(project_path), warnings, floors, below=_below_project(merged)
        )
        merge(merged, clamped, sources, str(project_path))
    if files:
        # what the files say, before any preset, -c or flag could override it: a bad value in a
        # file is exit 2 even when a flag replaces it (`timeout = -1` passed under --timeout 60)
        _validated(merged, sources)
    if policy is not None:
        merge(merged, policy[1], sources, policy[0])
    for text in overrides:
        parts, value = parse_override(text)
        merge(merged, nest(parts, value), sources, f"-c {'.'.join(parts)}")
    for dotted, value in (flags or {}).items():
        if value is None:
            continue
        flag = "--" + dotted.rsplit(".", 1)[-1].replace("_", "-")
        merge(merged, nest(dotted.split("."), value), sources, f"flag {flag}")
    if tool_rules is not None:  # around every layer's rules, never instead of them (config/flags.py)
        apply_tool_rules(merged, tool_rules, sources)

    settings = _validated(merged, sources)
    for key in list(sources):
        sources.setdefault(key, "defaults")
    return LoadedSettings(settings=settings, sources=sources, warnings=warnings, files=files)


def _validated(merged: dict[str, Any], sources: dict[str, str]) -> Settings:
    """`merged` as Settings; ConfigError naming the layer, the key and the reason."""
    try:
        return Settings.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = [str(p) for p in err["loc"]]
        key = ".".join(loc)
        source = _source_of(loc, sources)
        reason = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        raise ConfigError(reason, source=source, key=key) from None


def _source_of(loc: list[str], sources: dict[str, str]) -> str:
    for n in range(len(loc), 0, -1):
        path = ".".join(loc[:n])
        if path in sources:
            return sources[path]
        for key, src in sources.items():
            if key.startswith(path + "."):
                return src
    return "config"
