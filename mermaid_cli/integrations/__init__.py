"""Integrations with the outside world: MCP servers (`mcp/`) and the web (`web/`: fetcher,
extraction, net guard, search backends). `web` sits below the tools that use it; `mcp` above
the tool base it builds adapters on.
"""
