"""MCP client: servers' tools, resources and prompts for a run (`manager`), the model-facing tool
adapters (`tools`), remote sign-in (`oauth`; `oauth_flow` the interactive login, `oauth_store` the
keyring entry) and `--mcp-prompt` (`prompts`); the `mermaid mcp` commands live in
`mermaid_cli.cli.mcp`. Importing this package does not import the `mcp` SDK."""
