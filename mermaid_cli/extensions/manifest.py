"""`plugin.toml`: the manifest of a plugin bundle, and the audit that every path it names is
plugin-relative and stays inside the plugin directory once resolved (symlinks followed).

`audit` is what `mermaid plugin install` and `mermaid plugin audit` run; a run re-checks the
installed copy the same way before it loads anything from it, so nothing outside the directory
the user enabled is ever read or executed.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mermaid_cli.core.defaults import empty_list
from mermaid_cli.extensions.frontmatter import NAME_RE
from mermaid_cli.security.paths import within

MANIFEST = "plugin.toml"
#: a plugin tree bigger than this is not a bundle of scripts and playbooks
TREE_MAX_FILES = 5_000
TREE_MAX_BYTES = 64 * 1024 * 1024
ASSET_KINDS = ("skills", "hooks", "mcp", "prompts", "agents")


class PluginError(ValueError):
    """A plugin that cannot be installed or loaded; the message says why."""


class PluginManifest(BaseModel):
    """The fields of `plugin.toml`. Asset lists are plugin-relative paths."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Plugin name, [a-z0-9-]+.")
    version: str = Field("0.0.0", description="The plugin's version (shown, recorded in the lock).")
    description: str = Field("", description="One line about the plugin.")
    skills: list[str] = Field(default_factory=empty_list, description="Skill directories (or SKILL.md files).")
    hooks: list[str] = Field(default_factory=empty_list, description="Executables run for every hook event.")
    mcp: list[str] = Field(default_factory=empty_list, description="TOML files of [servers.NAME] MCP servers.")
    prompts: list[str] = Field(default_factory=empty_list, description="Markdown prompt commands.")
    agents: list[str] = Field(default_factory=empty_list, description="TOML files of [types.NAME] agent types.")
    capabilities: list[str] = Field(
        default_factory=empty_list, description="What the plugin says it does (disclosure only, grants nothing)."
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME_RE.fullmatch(value):
            raise ValueError("must be [a-z0-9-]+ (at most 64 characters)")
        return value

    def assets(self) -> list[tuple[str, str]]:
        """(kind, relative path) of every asset the manifest names."""
        return [(kind, rel) for kind in ASSET_KINDS for rel in getattr(self, kind)]


@dataclass
class Audit:
    """What a plugin directory holds and may do, as `plugin audit` prints it."""

    root: Path
    manifest: PluginManifest
    #: (kind, relative path) -> resolved absolute path
    paths: dict[tuple[str, str], Path] = field(default_factory=dict)
    files: int = 0
    bytes: int = 0

    def can(self) -> list[str]:
        """What enabling the plugin lets it do, in words."""
        m = self.manifest
        out = []
        if m.hooks:
            out.append(
                f"run {len(m.hooks)} hook executable(s) on every tool call and lifecycle event "
                "(a before_tool_use hook can deny or rewrite calls)"
            )
        if m.mcp:
            out.append(f"start the MCP servers in {', '.join(m.mcp)} (runs their commands)")
        if m.skills:
            out.append(f"add {len(m.skills)} skill path(s) to the system prompt's index")
        if m.prompts:
            out.append(f"add {len(m.prompts)} prompt command(s)")
        if m.agents:
            out.append(f"add the agent types in {', '.join(m.agents)}")
        return out or ["nothing: it declares no assets"]


def load_manifest(root: Path) -> PluginManifest:
    path = root / MANIFEST
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PluginError(f"{root}: no {MANIFEST}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PluginError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise PluginError(f"{path}: malformed TOML: {exc}") from None
    try:
        return PluginManifest.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        key = ".".join(str(p) for p in err["loc"]) or "manifest"
        reason = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        raise PluginError(f"{path}: {key}: {reason}") from None


def contained(root: Path, rel: str, what: str) -> Path:
    """`rel` resolved inside `root`, or PluginError: absolute paths, `..` and symlinks that lead
    out of the plugin are refused."""
    if not rel or "\x00" in rel:
        raise PluginError(f"{what}: empty or invalid path")
    if os.path.isabs(rel) or rel.startswith("~"):
        raise PluginError(f"{what}: {rel!r} is absolute; paths are plugin-relative")
    if ".." in Path(rel).parts:
        raise PluginError(f"{what}: {rel!r} uses `..`; paths must stay inside the plugin")
    root_real = os.path.realpath(root)
    real = os.path.realpath(os.path.join(root_real, rel))
    if not within(root_real, real):
        raise PluginError(f"{what}: {rel!r} resolves to {real}, outside the plugin (a symlink out of it)")
    if not os.path.exists(real):
        raise PluginError(f"{what}: {rel!r} does not exist")
    return Path(real)


def audit(root: Path, *, walk: bool = True) -> Audit:
    """Validate the plugin at `root`: its manifest, every asset path, and (with `walk`) every
    symlink of its tree (none may lead out) and its size."""
    if not root.is_dir():
        raise PluginError(f"{root}: not a directory")
    manifest = load_manifest(root)
    out = Audit(Path(os.path.realpath(root)), manifest)
    for kind, rel in manifest.assets():
        out.paths[(kind, rel)] = path = contained(root, rel, f"{kind} entry")
        if kind == "hooks" and not (path.is_file() and os.access(path, os.X_OK)):
            raise PluginError(f"hooks entry: {rel!r} is not an executable file (chmod +x it)")
    if walk:
        _walk(out)
    return out


def _walk(out: Audit) -> None:
    root = str(out.root)
    for base, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = os.path.join(base, name)
            if os.path.islink(path):
                target = os.readlink(path)
                rel = os.path.relpath(path, root)
                if os.path.isabs(target):
                    raise PluginError(
                        f"{rel}: an absolute symlink ({target}); links must be relative and inside"
                    )
                if not within(root, os.path.realpath(path)):
                    raise PluginError(f"{rel}: a symlink out of the plugin ({target})")
        for name in files:
            out.files += 1
            try:
                out.bytes += os.lstat(os.path.join(base, name)).st_size
            except OSError:
                pass
        if out.files > TREE_MAX_FILES or out.bytes > TREE_MAX_BYTES:
            raise PluginError(
                f"the plugin tree is over {TREE_MAX_FILES} files or {TREE_MAX_BYTES // (1024 * 1024)} MiB"
            )
