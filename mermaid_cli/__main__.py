"""`python -m mermaid_cli`: the `mermaid` command."""

import os
import sys

# `python -m` puts the current directory first on sys.path, where a `typing.py` or `json.py` of
# the repository Mermaid is pointed at would be imported in place of the standard library's, by
# Mermaid itself and outside any sandbox (the `mermaid` command has its own directory there,
# `python -P -m` nothing): nothing of Mermaid's comes from the current directory
if not sys.flags.safe_path and sys.path and sys.path[0] == os.getcwd():
    del sys.path[0]

from mermaid_cli.cli.entry import main  # noqa: E402

main()
