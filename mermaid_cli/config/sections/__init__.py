"""Config section models, one module per section. `mermaid_cli.config.loader` composes them into Settings.

Every model forbids unknown keys (an unknown key is exit 2 naming file and key)."""
