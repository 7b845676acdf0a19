"""A private workspace per task, and the task's change as one patch.

Inside a git repository a task gets the subagents' worktree (`run/worktree.py`): a detached
`git worktree` of HEAD seeded with the project's uncommitted state (tracked changes and untracked,
not ignored files) and committed there as a base. Outside git it gets a copy of the directory,
made a private repository with the same kind of base commit. Either way the task's change is
`git diff` against that base, so the patch holds exactly what the task did, binary files and
deletions included. Every git call goes through `run.worktree.git`, which runs none of the
repository's own code (hooks, fsmonitor, signing).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mermaid_cli.core.errors import UsageError
from mermaid_cli.run.worktree import Worktree, WorktreeError, commit_seed, git, patch_since

_SKIP_IN_COPY = {".git", ".mermaid", "node_modules"}


@dataclass(frozen=True)
class Workspace:
    """Where one batch task runs, and the commit its diff is taken against."""

    root: Path  # the task runs here (or in `root / task.path`)
    base: str  # the commit the task's diff is taken against
    kind: str  # "worktree" or "copy"
    #: the git worktree (None for a copy)
    tree: Worktree | None = None


async def git_root(directory: Path) -> Path | None:
    """The repository's top level, or None when `directory` is not in a repository with a commit
    (a repository without a commit has no HEAD to make a worktree of, so it is copied)."""

    def find() -> Path | None:
        try:
            top = git(["rev-parse", "--show-toplevel"], directory, os.environ).decode().strip()
            git(["rev-parse", "--verify", "-q", "HEAD"], directory, os.environ)
        except WorktreeError:
            return None
        return Path(top)

    return await asyncio.to_thread(find)


async def make_workspace(project: Path, parent: Path, name: str, in_git: bool) -> Workspace:
    """A fresh workspace for one task (outside the project)."""
    if in_git:
        tree = await Worktree.create(project, os.environ)
        return Workspace(root=tree.path, base=tree.seed, kind="worktree", tree=tree)
    target = parent / name

    def copy() -> str:
        try:
            shutil.copytree(
                project, target, symlinks=True, ignore=lambda _d, names: _SKIP_IN_COPY & set(names)
            )
        except (OSError, shutil.Error) as exc:
            raise WorktreeError(f"cannot copy {project} for the task: {exc}") from None
        git(["init", "-q"], target, os.environ)
        return commit_seed(target, os.environ)

    return Workspace(root=target, base=await asyncio.to_thread(copy), kind="copy")


async def task_patch(workspace: Workspace) -> bytes:
    """What the task changed, as one binary-safe patch against the base (b'' for nothing)."""
    return await asyncio.to_thread(patch_since, workspace.root, workspace.base, os.environ)


async def remove_workspace(workspace: Workspace) -> None:
    if workspace.tree is not None:
        await asyncio.to_thread(workspace.tree.remove)
    shutil.rmtree(workspace.root, ignore_errors=True)


def scratch_parent() -> Path:
    """Where copies go: a private temp directory outside every project, so a task never sees
    another task's files and the project's own tree is never searched through them."""
    try:
        return Path(tempfile.mkdtemp(prefix="mermaid-batch-"))
    except OSError as exc:
        raise UsageError(f"cannot make a temp directory for batch workspaces: {exc}") from None
