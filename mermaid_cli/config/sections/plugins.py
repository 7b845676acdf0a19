"""`[plugins]`: which installed plugins a run loads. Only the user config (and its profiles, `-c`)
may enable one: a project config is committed with the code, and enabling a plugin grants command
execution (hooks, MCP servers), so the loader drops `plugins` from a project file with a warning."""

from pydantic import Field

from mermaid_cli.config.sections.base import Section
from mermaid_cli.core.defaults import empty_list


class PluginsSection(Section):
    enabled: list[str] = Field(
        default_factory=empty_list,
        description="Installed plugins to load, besides those `mermaid plugin enable` turned on.",
    )
