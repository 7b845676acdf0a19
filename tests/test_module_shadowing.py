"""A repository's own Python files never stand in for the modules Mermaid imports: `python -m
mermaid_cli` takes the current directory off `sys.path` before importing anything of its own (the
`mermaid` command never has it there; `mermaid batch` starts its children with `-P`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import plant_shadows

SHADOWS = ("typing", "json", "asyncio", "dataclasses", "pydantic", "re")


@pytest.mark.parametrize("args", [["--version"], ["exec", "--help"]], ids=["version", "exec-help"])
def test_python_m_in_a_repository_with_standard_library_names_imports_none_of_them(
    tmp_path: Path, args: list[str]
) -> None:
    marker = tmp_path / "imported"
    repo = plant_shadows(tmp_path / "repo", list(SHADOWS), marker)
    proc = subprocess.run(
        [sys.executable, "-m", "mermaid_cli", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists(), marker.read_text()
