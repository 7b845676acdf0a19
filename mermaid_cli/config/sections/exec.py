"""`[exec]`: how commands run (timeouts, environment scrubbing) and how tool errors count."""

from pydantic import Field, model_validator

from mermaid_cli.config.sections.base import Section
from mermaid_cli.core.defaults import empty_list


class ExecSection(Section):
    env_allow: list[str] = Field(
        default_factory=empty_list,
        description="Environment variable names passed to commands even though they look secret.",
    )
    default_timeout: int = Field(120, ge=1, description="Seconds a foreground command may run by default.")
    max_timeout: int = Field(600, ge=1, description="Largest timeout a command may ask for, in seconds.")
    fail_on_tool_error: bool = Field(False, description="Exit 1 when any tool call failed.")

    @model_validator(mode="after")
    def _default_within_max(self) -> "ExecSection":
        if self.default_timeout > self.max_timeout:
            raise ValueError("default_timeout must not exceed max_timeout")
        return self
