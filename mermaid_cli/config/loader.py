"""Settings (pydantic) and the pure, layered `load_settings` (DESIGN.md §5).

Layers, later wins: built-in defaults < user file < `[profiles.NAME]` < project file (may only
tighten safety) < `--policy` preset < `-c key.path=TOML` < dedicated flags. Every leaf value
remembers which layer set it (`config show`), and a validation error names that layer's file,
the dotted key and the reason.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mermaid_cli.config.sections.base import Section
from mermaid_cli.config.sections.exec import ExecSection
from mermaid_cli.config.sections.hooks import HookSpec
from mermaid_cli.config.sections.longrun import CompactionSection, MemorySection
from mermaid_cli.config.sections.mcp import McpServerSettings
from mermaid_cli.config.sections.models import ModelSettings
from mermaid_cli.config.sections.providers import PriceSettings, ProviderSettings
from mermaid_cli.config.sections.safety import SafetySettings
from mermaid_cli.config.sections.sandbox import SandboxSection
from mermaid_cli.config.sections.tools import ToolsSection
from mermaid_cli.config.sections.web import WebSettings
from mermaid_cli.core.errors import ConfigError

SAFETY_MODES = ("read_only", "ask", "auto", "full_access")  # strictest first


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
        default_factory=list, description="Commands that must pass after the model finishes."
    )
    attempts: int = Field(
        2, ge=0, le=20, description="Extra rounds the model gets to fix a failing verify command."
    )
    timeout: float = Field(600, gt=0, description="Seconds each verify command may run.")


class HooksSettings(Section):
    before_tool_use: list[HookSpec] = Field(
        default_factory=list, description="Commands that see each tool call first and may deny or rewrite it."
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


# Keys a project file (committed with the code, possibly by an untrusted PR) may not set.
PROJECT_FORBIDDEN = ("providers", "mcp_servers", "web", "pricing", "models", "model", "hooks")
PROJECT_FORBIDDEN_SAFETY = ("allow_readonly_web", "allow_untrusted_headless_tools", "auto_classifier_model")


@dataclass
class Layer:
    name: str  # "defaults", "user config", "profile NAME", "project config", "policy", "-c", "flags"
    source: str  # a file path or a description, used in error messages
    data: dict[str, Any]


@dataclass
class LoadedSettings:
    settings: Settings
    sources: dict[str, str] = field(default_factory=dict)  # dotted key -> layer source
    warnings: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def user_config_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("MERMAID_CONFIG_DIR"):
        return Path(env["MERMAID_CONFIG_DIR"]).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "mermaid"
    if os.name == "nt":
        return Path(env.get("APPDATA", Path.home())) / "mermaid"
    return Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "mermaid"


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("MERMAID_DATA_DIR"):
        return Path(env["MERMAID_DATA_DIR"]).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "mermaid"
    return Path(env.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "mermaid"


def find_git_root(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


def read_toml(path: Path) -> dict[str, Any] | None:
    """The parsed file, None when absent; ConfigError naming the file when malformed."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", source=str(path)) from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError("not UTF-8 text", source=str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"malformed TOML: {exc}", source=str(path)) from None


def parse_override(text: str) -> tuple[list[str], Any]:
    """`key.path=VALUE` with VALUE parsed as TOML (`true`, `3`, `"x"`, `[1,2]`); a bare word is a string."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"expected key.path=VALUE, got {text!r}", source="-c")
    parts = [p.strip().strip('"') for p in key.split(".")]
    if any(not p for p in parts):
        raise ConfigError(f"bad key {key!r}", source="-c")
    try:
        parsed = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()
    return parts, parsed


def nest(parts: list[str], value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    cur = out
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value
    return out


def _merge(
    base: dict[str, Any], over: dict[str, Any], sources: dict[str, str], source: str, prefix: str = ""
) -> None:
    """Deep merge: tables merge, scalars and arrays replace. Records each leaf's source."""
    for key, value in over.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value, sources, source, path + ".")
        else:
            base[key] = _copy(value)
            for sub in [k for k in sources if k == path or k.startswith(path + ".")]:
                del sources[sub]
            _record(value, path, sources, source)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _record(value: Any, path: str, sources: dict[str, str], source: str) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _record(v, f"{path}.{k}", sources, source)
    else:
        sources[path] = source


def _safety_rank(mode: Any) -> int:
    return SAFETY_MODES.index(mode) if mode in SAFETY_MODES else len(SAFETY_MODES)


FLOOR_LEVELS = ("allow", "auto", "ask", "deny")  # loosest first


def _clamp_project(
    data: dict[str, Any],
    current_mode: Any,
    source: str,
    warnings: list[str],
    current_floors: dict[str, str],
    below: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A project file may only tighten: it may not configure providers, servers, web trust, hooks
    or verify commands (a pull request can add the file, and they all run or trust something),
    may not loosen safety, and may move every numeric limit or budget only downward relative to
    `below` (the effective settings of the layers under it). Whatever it tried is a warning
    naming the key."""
    data = _copy(data)
    for key in PROJECT_FORBIDDEN:
        if key in data:
            del data[key]
            warnings.append(f"{source}: `{key}` is ignored in a project config (set it in your user config)")
    verify = data.get("verify")
    if isinstance(verify, dict) and "commands" in verify:
        del verify["commands"]
        warnings.append(
            f"{source}: `verify.commands` is ignored in a project config (commands it names would run; "
            "pass --verify or set it in your user config)"
        )
    tools = data.get("tools")
    if isinstance(tools, dict) and tools.get("computer") is True:
        del tools["computer"]  # a pull request must not turn on screenshots sent to the provider
        warnings.append(
            f"{source}: `tools.computer = true` is ignored in a project config (set it in your user config)"
        )
    if isinstance(tools, dict) and "categories" in tools:
        del tools["categories"]  # a pull request must not move execute_command to `read`
        warnings.append(f"{source}: `tools.categories` is ignored in a project config (set it in your user config)")
    if below is not None:
        _clamp_numbers(data, below, (), source, warnings)
    safety = data.get("safety")
    if isinstance(safety, dict):
        for key in PROJECT_FORBIDDEN_SAFETY:
            if key in safety:
                del safety[key]
                warnings.append(f"{source}: `safety.{key}` is ignored in a project config")
        mode = safety.get("mode")
        if mode is not None and mode in SAFETY_MODES and _safety_rank(mode) > _safety_rank(current_mode):
            del safety["mode"]
            warnings.append(
                f"{source}: safety.mode = {mode!r} would loosen {current_mode!r}; a project config may only tighten it"
            )
        rules = safety.get("overrides")
        if isinstance(rules, list):
            kept = [r for r in rules if not (isinstance(r, dict) and r.get("decision") == "allow")]
            if len(kept) != len(rules):
                warnings.append(f"{source}: `allow` overrides are ignored in a project config")
                safety["overrides"] = kept
        for key, loose in (("network", "allow"), ("filesystem", "unrestricted")):
            if safety.get(key) == loose:
                del safety[key]
                warnings.append(
                    f"{source}: safety.{key} = {loose!r} is ignored in a project config (it would loosen)"
                )
        for key in ("external_writes", "system_installs"):  # floors: only raised, never lowered
            level = safety.get(key)
            if level in FLOOR_LEVELS and FLOOR_LEVELS.index(level) < FLOOR_LEVELS.index(current_floors[key]):
                del safety[key]
                warnings.append(
                    f"{source}: safety.{key} = {level!r} would lower the floor; a project config may only raise it"
                )
        if safety.get("checkpoint_on_mutation") is False:
            del safety["checkpoint_on_mutation"]
            warnings.append(f"{source}: safety.checkpoint_on_mutation = false is ignored in a project config")
    sandbox = data.get("sandbox")
    if isinstance(sandbox, dict):  # a pull request must not switch the kernel sandbox off or widen it
        if sandbox.get("mode") in ("off", "best-effort"):
            warnings.append(f"{source}: sandbox.mode = {sandbox.pop('mode')!r} is ignored in a project config")
        for key in ("writable_roots", "readable_roots"):
            if key in sandbox:
                del sandbox[key]
                warnings.append(f"{source}: `sandbox.{key}` is ignored in a project config")
    exec_ = data.get("exec")
    if isinstance(exec_, dict) and "env_allow" in exec_:
        del exec_["env_allow"]
        warnings.append(
            f"{source}: `exec.env_allow` is ignored in a project config (it could pass secrets to commands)"
        )
    return data


def _clamp_numbers(
    data: dict[str, Any], below: dict[str, Any], at: tuple[str, ...], source: str, warnings: list[str]
) -> None:
    """Drop every number in the project layer that is above the value beneath it. A lower layer's
    None (no limit, or not set) is looser than any number, so a number there is a tightening."""
    for key in list(data):
        value = data[key]
        base = below.get(key) if isinstance(below, dict) else None
        dotted = ".".join((*at, key))
        if isinstance(value, dict):
            _clamp_numbers(value, base if isinstance(base, dict) else {}, (*at, key), source, warnings)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            if isinstance(base, int | float) and not isinstance(base, bool) and value > base:
                del data[key]
                warnings.append(
                    f"{source}: `{dotted}` = {value} would raise {base}; a project config may only lower limits"
                )


def _below_project(merged: dict[str, Any]) -> dict[str, Any]:
    """The effective values under the project layer: the defaults with the user layers on top."""
    base: dict[str, Any] = Settings().model_dump(mode="python")

    def over(into: dict[str, Any], layer: dict[str, Any]) -> None:
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                over(into[key], value)
            else:
                into[key] = value

    over(base, _copy(merged))
    return base


def load_settings(
    *,
    project_root: Path,
    env: Mapping[str, str] | None = None,
    profile: str | None = None,
    policy: tuple[str, dict[str, Any]] | None = None,
    overrides: list[str] = (),  # type: ignore[assignment]
    flags: dict[str, Any] | None = None,
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
        _merge(merged, layer.data, sources, layer.source)
    if project is not None:
        files.append(str(project_path))
        current_mode = (
            merged.get("safety", {}).get("mode", "auto") if isinstance(merged.get("safety"), dict) else "auto"
        )
        safety_value = merged.get("safety")
        safety_so_far: dict[str, Any] = safety_value if isinstance(safety_value, dict) else {}
        floors = {k: str(safety_so_far.get(k, "auto")) for k in ("external_writes", "system_installs")}
        floors = {k: v if v in FLOOR_LEVELS else "auto" for k, v in floors.items()}
        clamped = _clamp_project(
            project, current_mode, str(project_path), warnings, floors, below=_below_project(merged)
        )
        _merge(merged, clamped, sources, str(project_path))
    if policy is not None:
        _merge(merged, policy[1], sources, policy[0])
    for text in overrides:
        parts, value = parse_override(text)
        _merge(merged, nest(parts, value), sources, f"-c {'.'.join(parts)}")
    for dotted, value in (flags or {}).items():
        if value is None:
            continue
        flag = "--" + dotted.rsplit(".", 1)[-1].replace("_", "-")
        _merge(merged, nest(dotted.split("."), value), sources, f"flag {flag}")

    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = [str(p) for p in err["loc"]]
        key = ".".join(loc)
        source = _source_of(loc, sources)
        reason = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        raise ConfigError(reason, source=source, key=key) from None
    for key in list(sources):
        sources.setdefault(key, "defaults")
    return LoadedSettings(settings=settings, sources=sources, warnings=warnings, files=files)


def _source_of(loc: list[str], sources: dict[str, str]) -> str:
    for n in range(len(loc), 0, -1):
        path = ".".join(loc[:n])
        if path in sources:
            return sources[path]
        for key, src in sources.items():
            if key.startswith(path + "."):
                return src
    return "config"


def _leaves(loaded: LoadedSettings) -> list[tuple[tuple[str, ...], Any, str]]:
    """(key parts, value, source) for every leaf of the effective settings."""
    out: list[tuple[tuple[str, ...], Any, str]] = []

    def walk(value: Any, parts: tuple[str, ...]) -> None:
        if isinstance(value, dict) and value:
            for k, v in value.items():
                walk(v, (*parts, k))
        else:
            out.append((parts, value, loaded.sources.get(".".join(parts), "defaults")))

    walk(loaded.settings.model_dump(mode="json"), ())
    return out


def effective_items(loaded: LoadedSettings) -> list[tuple[str, Any, str]]:
    """(dotted key, value, source) for every leaf of the effective settings, for `config show`."""
    return [(".".join(parts), value, source) for parts, value, source in _leaves(loaded)]


def effective_toml(loaded: LoadedSettings) -> str:
    """The effective settings as TOML, each line commented with its source. A key that is not set
    (TOML has no null) is shown as a comment, so the whole text parses with `tomllib`."""
    lines = []
    for parts, value, source in _leaves(loaded):
        key = ".".join(_toml_key(part) for part in parts)
        if value is None:
            lines.append(f"# {key} is not set    # {source}")
        else:
            lines.append(f"{key} = {_toml_value(value)}    # {source}")
    return "\n".join(lines) + "\n"


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, str):
        return json.dumps(value)  # JSON string escapes are valid TOML basic-string escapes
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value if item is not None) + "]"
    if isinstance(value, dict):
        pairs = (f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items() if v is not None)
        return "{" + ", ".join(pairs) + "}"
    return json.dumps(str(value))
