"""`[[hooks.before_tool_use]]`: one hook command, as config (and plugin manifests) describe it.
`mermaid_cli.policy.hooks` runs them."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


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
