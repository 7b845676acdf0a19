"""The command line: `main` holds the `mermaid` group and `exec`/`run`; every other command group lives
in its own module, loaded on first use through the table in `lazy`. The top layer: nothing imports it.
"""
