"""`[safety]`: the policy gate's configuration (DESIGN.md §4)."""

import hashlib
import json
from typing import Literal

from pydantic import Field, PrivateAttr, model_validator

from mermaid_cli.config.sections.base import Section
from mermaid_cli.core.defaults import empty_list

SafetyMode = Literal["read_only", "ask", "auto", "full_access"]
FloorLevel = Literal["allow", "auto", "ask", "deny"]
Category = Literal[
    "read",
    "edit",
    "shell",
    "process",
    "web",
    "mcp",
    "subagent",
    "memory",
    "session",
    "external_directory",
    "computer",
]


class Override(Section):
    """One `[[safety.overrides]]` rule. The first rule that matches a call decides it."""

    tool: str | None = Field(None, description="Tool name (glob allowed, e.g. 'mcp__github__*').")
    category: Category | None = Field(None, description="Tool category.")
    pattern: str | None = Field(
        None,
        description=(
            "For allow: the program of a single simple shell command (e.g. 'cargo' or 'npm test'), "
            "or an exact path/host. For ask/deny: a substring of the command, path or summary."
        ),
    )
    decision: Literal["allow", "ask", "deny"] = Field("ask", description="What to do with a matching call.")
    reason: str | None = Field(None, description="Shown to the model when the rule denies.")
    checkpoint: bool | None = Field(
        None, description="Accepted for compatibility; checkpoints follow [safety] checkpoint_on_mutation."
    )
    trust_after_untrusted: bool = Field(
        False,
        description=(
            "Keep allowing after untrusted content (web pages, MCP results) entered the conversation; "
            "by default auto mode then sends shell mutations and network calls to the reviewer."
        ),
    )

    @model_validator(mode="after")
    def _needs_a_selector(self) -> "Override":
        if self.tool is None and self.category is None and self.pattern is None:
            raise ValueError("a safety override needs at least one of tool, category, pattern")
        return self


class SafetySettings(Section):
    mode: SafetyMode = Field("auto", description="read_only | ask | auto | full_access.")
    overrides: list[Override] = Field(
        default_factory=empty_list, description="Allow/ask/deny rules; first match wins."
    )
    external_writes: FloorLevel = Field(
        "auto", description="Floor for write-shaped MCP tools (no readOnlyHint), even in full_access."
    )
    system_installs: FloorLevel = Field(
        "auto", description="Floor for machine-scoped installs (pip install, apt-get…), even in full_access."
    )
    auto_classifier_model: str | None = Field(
        None, description="provider/model for the auto-mode reviewer (default: the session model)."
    )
    allow_untrusted_headless_tools: bool = Field(
        False, description="Headless: let web, MCP, subagent and outside-read calls through an ask."
    )
    allow_readonly_web: bool = Field(False, description="In read_only, allow web reads without asking.")
    network: Literal["allow", "deny"] = Field("allow", description="deny = --no-network.")
    filesystem: Literal["unrestricted", "project"] = Field(
        "unrestricted", description="project = shell writes confined to the project (--confine-fs)."
    )
    checkpoint_on_mutation: bool = Field(True, description="Checkpoint files before a mutating call.")
    # Set by the runner, never by a config file (a private attribute is no config key): the
    # kernel sandbox (DESIGN §4.1) is in force for shell commands, so read_only may run commands
    # the classifier does not know inside it instead of denying them.
    _sandboxed: bool = PrivateAttr(False)

    @property
    def sandboxed(self) -> bool:
        return self._sandboxed

    def mark_sandboxed(self, value: bool = True) -> None:
        self._sandboxed = value


def policy_digest(settings: SafetySettings) -> str:
    """sha256 of the effective policy as canonical JSON (sorted keys, no whitespace)."""
    data = settings.model_dump(mode="json")
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
