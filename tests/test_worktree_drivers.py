"""Mermaid's own git for worktrees and batch workspaces runs none of the repository's content
filters or diff drivers: a repository handed over with its `.git` is as hostile as its files, and
this git runs outside any sandbox (`git worktree add` ran `filter.x.smudge`)."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from mermaid_cli.run.worktree import Worktree


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_a_worktree_and_its_patch_run_no_driver_of_the_repository(tmp_path: Path) -> None:
    ran = tmp_path / "RAN"
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "root")
    (repo / ".gitattributes").write_text("*.a filter=x diff=x\n*.b filter=y\n")
    (repo / "f.a").write_text("one\n")
    (repo / "f.b").write_text("two\n")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "-m", "files")
    for key, value in (
        ("filter.x.clean", f"sh -c 'touch {ran}-clean; cat'"),
        ("filter.x.smudge", f"sh -c 'touch {ran}-smudge; cat'"),
        ("filter.y.process", f"sh -c 'touch {ran}-process'"),
        ("diff.x.textconv", f"sh -c 'touch {ran}-textconv; cat \"$1\"' -"),
    ):
        _git(repo, "config", key, value)
    (repo / "f.a").write_text("changed by the parent\n")  # seeded into the worktree

    async def go() -> bytes:
        tree = await Worktree.create(repo, {"PATH": "/usr/bin:/bin"})
        try:
            assert (tree.project / "f.a").read_text() == "changed by the parent\n"
            (tree.project / "f.b").write_text("changed by the child\n")
            return await tree.patch()
        finally:
            tree.remove()

    patch = asyncio.run(go())
    assert b"changed by the child" in patch
    assert sorted(p.name for p in tmp_path.glob("RAN*")) == []
