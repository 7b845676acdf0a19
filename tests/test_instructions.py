"""Project instruction files for the system prompt."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mermaid_cli.run.instructions import TRUNCATED_MARKER, cap_utf8, load_project_instructions


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    d = tmp_path / "config"
    d.mkdir()
    return d


def test_no_files_gives_empty_text(project, user_dir):
    assert load_project_instructions(project, user_dir) == ""
    assert load_project_instructions(project, None) == ""


def test_all_files_in_order_user_first(project, user_dir):
    (user_dir / "MERMAID.md").write_text("user rule\n")
    (project / "AGENTS.md").write_text("agents rule\n")
    (project / "CLAUDE.md").write_text("claude rule\n")
    (project / "MERMAID.md").write_text("mermaid rule\n")
    text = load_project_instructions(project, user_dir)
    assert text == (
        "## MERMAID.md (user)\n\nuser rule\n\n"
        "## AGENTS.md\n\nagents rule\n\n"
        "## CLAUDE.md\n\nclaude rule\n\n"
        "## MERMAID.md\n\nmermaid rule"
    )


def test_duplicate_claude_md_is_skipped(project, user_dir):
    (project / "AGENTS.md").write_text("same rules\n")
    os.symlink("AGENTS.md", project / "CLAUDE.md")
    assert load_project_instructions(project, user_dir) == "## AGENTS.md\n\nsame rules"
    (project / "CLAUDE.md").unlink()
    (project / "CLAUDE.md").write_text("same rules")
    assert load_project_instructions(project, user_dir) == "## AGENTS.md\n\nsame rules"


def test_symlink_out_of_project_is_not_read(project, user_dir, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    os.symlink(secret, project / "AGENTS.md")
    (project / "MERMAID.md").write_text("ok")
    text = load_project_instructions(project, user_dir)
    assert "TOP SECRET" not in text and "ok" in text


def test_directories_empty_files_and_bad_bytes(project, user_dir):
    (project / "AGENTS.md").mkdir()
    (project / "CLAUDE.md").write_text("   \n")
    (project / "MERMAID.md").write_bytes(b"caf\xe9 rule")
    assert load_project_instructions(project, user_dir) == "## MERMAID.md\n\ncaf\ufffd rule"


def test_capped_at_40000_bytes_with_marker(project, user_dir):
    (project / "AGENTS.md").write_text("é" * 30_000)  # 2 bytes each
    (project / "MERMAID.md").write_text("tail rule")
    text = load_project_instructions(project, user_dir)
    assert len(text.encode()) <= 40_000
    assert text.endswith("\n" + TRUNCATED_MARKER)
    assert "tail rule" not in text
    assert text.startswith("## AGENTS.md\n\néé")


def test_under_cap_is_untouched(project, user_dir):
    body = "x" * 39_000
    (project / "AGENTS.md").write_text(body)
    assert load_project_instructions(project, user_dir) == "## AGENTS.md\n\n" + body


def test_cap_utf8_never_splits_a_character():
    out = cap_utf8("€" * 100, 50, "[cut]")
    assert len(out.encode()) <= 50 and out.endswith("[cut]")
    out.encode("utf-8")  # valid text
