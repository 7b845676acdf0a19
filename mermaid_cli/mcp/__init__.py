"""MCP client: servers' tools, resources and prompts for a run (`manager`), the model-facing tool
adapters (`tools`), remote sign-in (`oauth`), `--mcp-prompt` (`prompts`) and the `mermaid mcp`
commands (`commands`). Importing this package does not import the `mcp` SDK."""
