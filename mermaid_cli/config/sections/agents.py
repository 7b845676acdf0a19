"""`[agents]`: subagents (the `agent` tool): nesting depth, the per-child timeout, tools no child
may use, and custom `[agents.types.NAME]` types. The built-in types (`general`, `explore`,
`review`) are defined in `mermaid_cli.run.subagents` and cannot be redefined here."""

from typing import Literal

from pydantic import Field, field_validator

from mermaid_cli.config.sections.base import Section
from mermaid_cli.config.sections.safety import SafetyMode
from mermaid_cli.core.defaults import empty_list

BUILTIN_TYPES = ("general", "explore", "review")
#: however `max_depth` is set, nesting never goes deeper than this
MAX_DEPTH_CAP = 5


class AgentTypeSettings(Section):
    """One custom subagent type."""

    description: str = Field("", description="What the type is for (listed in the agent tool's description).")
    tools: list[str] | None = Field(
        None, description="Tool names the child is offered (default: the parent's)."
    )
    safety: SafetyMode = Field("full_access", description="Ceiling on the child's safety mode.")
    preamble: str = Field("", description="Instructions put before the child's prompt.")
    model: str | None = Field(None, description="provider/model for the child (default: the parent's).")
    isolation: Literal["shared", "worktree"] = Field(
        "shared", description="shared | worktree (a private git worktree)."
    )


class AgentsSection(Section):
    max_depth: int = Field(
        2, ge=0, le=MAX_DEPTH_CAP, description="How deep subagents may nest (0 removes the agent tool)."
    )
    timeout: float = Field(
        1200, gt=0, description="Seconds one child may run (never past the run's --timeout)."
    )
    deny_tools: list[str] = Field(default_factory=empty_list, description="Tools no subagent is offered.")
    deny_servers: list[str] = Field(
        default_factory=empty_list, description="MCP servers no subagent starts (unioned with each call's)."
    )
    types: dict[str, AgentTypeSettings] = Field(default_factory=dict, description="Custom subagent types.")

    @field_validator("types")
    @classmethod
    def _no_builtin(cls, types: dict[str, AgentTypeSettings]) -> dict[str, AgentTypeSettings]:
        clash = sorted(set(types) & set(BUILTIN_TYPES))
        if clash:
            raise ValueError(f"agents.types.{clash[0]}: the built-in type {clash[0]!r} cannot be redefined")
        return types
