"""The command line: `main` holds the `mermaid` group and `exec`; other command groups live in
their own modules (`checkpoints`, `providers`, `mcp`). The top layer: nothing imports it.
"""
