"""The `computer` tool family: `geometry` (screenshot scaling, pure), `screen` (the X11 screen via
mss and pynput, imported only when the tool is on) and `tool` (the actions and their per-run
state). `mermaid_cli.tools.catalog_computer` decides whether a run offers it."""
