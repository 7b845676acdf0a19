"""Security: what a child process may see and do.

This package owns redaction, the child environment and the kernel sandbox (`sandbox/`, one
backend per OS). It sits in the lowest import layer: it may import `mermaid_cli.errors` and
`mermaid_cli.types` and nothing above them, so every other layer can depend on it.

For now it only contains `sandbox/`; `redact.py` and `childenv.py` move in later.
"""
