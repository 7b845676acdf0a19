"""`[[hooks.EVENT]]`: one hook command, as config (and plugin manifests) describe it, and the
observe-only lifecycle events a hook can subscribe to. `mermaid_cli.policy.hooks` runs them."""

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from mermaid_cli.config.sections.base import Section
from mermaid_cli.core.defaults import empty_list


class HookSpec(BaseModel):
    """One hook command (from `[[hooks.before_tool_use]]` or a plugin manifest)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str = Field(description="Shell command (run with /bin/sh -c).")
    name: str | None = Field(
        None, description="Label in warnings and denials (the plugin name for plugin hooks)."
    )
    cwd: Path | None = Field(None, description="Working directory (default: the current one).")
    timeout: float | None = Field(None, description="Seconds before the hook is killed (default 10).")

    @property
    def label(self) -> str:
        return self.name or (self.command.split()[0] if self.command.split() else "hook")


#: the observe-only lifecycle events, in the order a run reaches them
LIFECYCLE_EVENTS = (
    "session_start",
    "after_tool_use",
    "turn_done",
    "approval_requested",
    "checkpoint",
    "session_end",
)


class LifecycleHooks(Section):
    """`[[hooks.session_start]]` … `[[hooks.session_end]]`: observers. They see the event as JSON on
    stdin and cannot change anything; one that fails is a warning."""

    session_start: list[HookSpec] = Field(default_factory=empty_list, description="Observers of the run's start.")
    after_tool_use: list[HookSpec] = Field(
        default_factory=empty_list, description="Observers of each finished tool call."
    )
    turn_done: list[HookSpec] = Field(default_factory=empty_list, description="Observers of each model turn.")
    approval_requested: list[HookSpec] = Field(
        default_factory=empty_list, description="Observers of each approval the gate asks for."
    )
    checkpoint: list[HookSpec] = Field(
        default_factory=empty_list, description="Observers of each file checkpoint taken."
    )
    session_end: list[HookSpec] = Field(
        default_factory=empty_list, description="Observers of the run's end (status, exit code, report)."
    )

    def for_event(self, event: str) -> list[HookSpec]:
        """The configured observers of one lifecycle event (see LIFECYCLE_EVENTS)."""
        hooks: list[HookSpec] = getattr(self, event)
        return hooks
