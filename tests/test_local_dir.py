"""Mermaid's own writes under `.mermaid/` (run history, `.gitignore`) never follow a symlink the
repository committed there: Mermaid writes them itself, outside any sandbox."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import run_inprocess, say, write_script

from mermaid_cli.store.local import local_dir


def test_a_symlinked_gitignore_is_left_alone_and_its_target_untouched(tmp_path: Path) -> None:
    victim = tmp_path / "victim.bin"
    victim.write_bytes(b"BIN\xff\xfeDATA")
    (tmp_path / "p" / ".mermaid").mkdir(parents=True)
    (tmp_path / "p" / ".mermaid" / ".gitignore").symlink_to(victim)
    assert local_dir(tmp_path / "p", "conversations").is_dir()
    assert victim.read_bytes() == b"BIN\xff\xfeDATA"


def test_a_gitignore_that_is_not_utf8_is_not_rewritten(tmp_path: Path) -> None:
    (tmp_path / ".mermaid").mkdir()
    (tmp_path / ".mermaid" / ".gitignore").write_bytes(b"\xff\xfe")
    local_dir(tmp_path, "conversations")
    assert (tmp_path / ".mermaid" / ".gitignore").read_bytes() == b"\xff\xfe"


def test_the_gitignore_is_appended_to_not_replaced(tmp_path: Path) -> None:
    (tmp_path / ".mermaid").mkdir()
    (tmp_path / ".mermaid" / ".gitignore").write_text("mine")
    local_dir(tmp_path, "conversations")
    local_dir(tmp_path, "batch")
    assert (tmp_path / ".mermaid" / ".gitignore").read_text() == "mine\nconversations/\n.gitignore\nbatch/\n"


@pytest.mark.parametrize("link", [".mermaid", ".mermaid/conversations"])
def test_a_symlinked_history_dir_is_refused(tmp_path: Path, link: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    project = tmp_path / "p"
    (project / ".mermaid").mkdir(parents=True) if link != ".mermaid" else project.mkdir()
    (project / link).symlink_to(outside)
    with pytest.raises(NotADirectoryError, match="not a directory"):
        local_dir(project, "conversations")
    assert os.listdir(outside) == []


def test_a_run_in_a_repository_with_a_symlinked_history_dir_writes_nothing_outside(
    project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "convs"
    outside.mkdir()
    (project / ".mermaid").mkdir()
    (project / ".mermaid" / "conversations").symlink_to(outside)
    script = write_script(tmp_path / "s.jsonl", [say("done")])
    out = run_inprocess(["--json", "--safety", "read_only", "--model", f"replay/{script}", "go"], project)
    assert out.code == 2, out.stderr
    assert out.events[-1]["type"] == "result" and "not a directory" in out.stderr
    assert os.listdir(outside) == []
