"""Import every declared runtime dependency, optional stacks included, and name the broken one.

An upstream packaging change (lxml 6 moving `lxml.html.clean` out, which broke trafilatura's import)
must turn CI red with a clear line, not ship as a broken tool to users.
"""

from __future__ import annotations

import importlib
import sys

MODULES = {
    "click": "CLI",
    "pydantic": "settings and events",
    "httpx": "providers",
    "tomli_w": "config writes",
    "jsonschema": "--output-schema",
    "keyring": "mermaid login / MCP tokens",
    "mcp": "MCP servers",
    "lxml_html_clean": "trafilatura's HTML cleaner",
    "trafilatura": "web_fetch main-content extraction",
}

failed = []
for module, used_for in MODULES.items():
    try:
        importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - any failure is the finding
        failed.append(f"ci: cannot import {module} ({used_for}): {type(exc).__name__}: {exc}")

from mermaid_cli.integrations.web.extract import readability_status  # noqa: E402

problem = readability_status()
if problem:
    failed.append(f"ci: web_fetch is degraded: {problem}")
if failed:
    print("\n".join(failed), file=sys.stderr)
    sys.exit(1)
print(f"ci: all {len(MODULES)} runtime dependencies import")
