"""`[tools]`: which tools a run offers and the policy category the gate judges each one by.

`ProviderToolsSettings` (vendor-native tools, the computer) keeps its keys; this section adds the
filters. Names are tool names (`read_file`, `mcp__github__create_issue`), shell-style patterns
(`mcp__github__*`) or group names (`tasks`, `web`, `mcp`, ...; `tools.filters.GROUPS`). A project
config may not set `categories` (it could move a tool to a laxer category).
"""

from pydantic import Field

from mermaid_cli.config.sections.providers import ProviderToolsSettings
from mermaid_cli.config.sections.safety import Category
from mermaid_cli.core.defaults import empty_list


class ToolsSection(ProviderToolsSettings):
    enabled: list[str] | None = Field(
        None,
        description="Allow-list: offer only these tools, patterns or groups (unset: every tool).",
    )
    disabled: list[str] = Field(
        default_factory=empty_list,
        description="Block-list: never offer these tools, patterns or groups (wins over `enabled`).",
    )
    categories: dict[str, Category] = Field(
        default_factory=dict,
        description="Per-tool policy category the gate judges the tool by, replacing its own (user config only).",
    )
