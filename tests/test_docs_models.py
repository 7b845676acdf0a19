"""docs/models.md lists every row of the model table with its ids, source and date."""

from __future__ import annotations

from pathlib import Path

from mermaid_cli.providers.models import table

DOC = Path(__file__).resolve().parent.parent / "docs" / "models.md"


def test_every_model_row_is_documented_with_its_source_and_date():
    lines = DOC.read_text(encoding="utf-8").splitlines()
    for row in table():
        (line,) = [x for x in lines if x.startswith(f"| {row.family} |")]
        assert all(f"`{i}`" in line for i in row.ids), row.family
        assert row.source.replace("|", "/") in line and f"| {row.checked} |" in line, row.family
        assert f"{row.context_window:,}" in line and f"{row.max_output:,}" in line, row.family
