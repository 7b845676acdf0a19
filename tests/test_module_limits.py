"""Size limits of issue 13 for the CLI and MCP areas: no module over 400 lines, so a command group
or an MCP concern stays readable in one sitting (add a module next to it instead)."""

from __future__ import annotations

import pytest
from conftest import ROOT

LIMIT = 400
AREAS = ("mermaid_cli/cli", "mermaid_cli/integrations/mcp")


@pytest.mark.parametrize("area", AREAS)
def test_no_module_over_the_line_limit(area):
    sizes = {
        p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines()) for p in (ROOT / area).glob("*.py")
    }
    assert sizes, area
    assert {name: n for name, n in sizes.items() if n > LIMIT} == {}


def test_mcp_parts_do_not_import_the_sdk():
    """The manager's parts stay cheap to import: only a configured server pays for `mcp`."""
    import subprocess
    import sys

    code = (
        "import sys, mermaid_cli.integrations.mcp.server, mermaid_cli.integrations.mcp.catalog, "
        "mermaid_cli.integrations.mcp.resources, mermaid_cli.integrations.mcp.manager\n"
        "print([m for m in ('mcp', 'mcp_types', 'httpx', 'httpx2', 'anyio') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
