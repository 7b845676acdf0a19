"""A private workspace per task, and the task's change as one patch.

Inside a git repository a task gets a detached `git worktree` of HEAD, seeded with the project's
uncommitted state (tracked changes and untracked, not ignored files) and committed there as a
base; outside git it gets a copy of the directory, made a private repository with the same kind of
base commit. Either way the task's change is `git diff` against that base, so the patch holds
exactly what the task did, binary files and deletions included.

The repository is assumed hostile: every git call here runs with its hooks disabled, no signing,
no pager and a fixed identity, so a repository's `.git/hooks` or config never runs code for us.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mermaid_cli.core.errors import UsageError

#: options that make git run nothing of the repository's own (hooks, fsmonitor, pager, signing)
_SAFE_GIT = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.pager=cat",
    "-c",
    "user.name=mermaid batch",
    "-c",
    "user.email=batch@mermaid.invalid",
)
_SKIP_IN_COPY = {".git", ".mermaid", "node_modules"}


class WorkspaceError(Exception):
    """A workspace could not be made or read; the task ends as an internal error naming why."""


@dataclass(frozen=True)
class Workspace:
    root: Path  # the task runs here (or in `root / task.path`)
    base: str  # the commit the task's diff is taken against
    kind: str  # "worktree" or "copy"
    project: Path  # the repository (worktree) or directory (copy) it was made from


async def git(cwd: Path, *args: str, stdin: bytes | None = None, check: bool = True) -> bytes:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    proc = await asyncio.create_subprocess_exec(
        "git",
        *_SAFE_GIT,
        *args,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate(stdin)
    if check and proc.returncode != 0:
        raise WorkspaceError(f"git {' '.join(args[:2])} failed: {err.decode(errors='replace').strip()}")
    return out


async def git_root(directory: Path) -> Path | None:
    """The repository's top level, or None when `directory` is not in a repository with a commit
    (a repository without a commit has no HEAD to make a worktree of, so it is copied)."""
    try:
        top = (await git(directory, "rev-parse", "--show-toplevel")).decode().strip()
        await git(directory, "rev-parse", "--verify", "-q", "HEAD")
    except (WorkspaceError, FileNotFoundError):
        return None
    return Path(top)


async def _commit_base(root: Path) -> str:
    await git(root, "add", "-A")
    await git(root, "commit", "-q", "--allow-empty", "--no-verify", "-m", "mermaid batch: base")
    return (await git(root, "rev-parse", "HEAD")).decode().strip()


async def make_workspace(project: Path, parent: Path, name: str, in_git: bool) -> Workspace:
    """A fresh workspace for one task under `parent` (outside the project)."""
    target = parent / name
    if in_git:
        await git(project, "worktree", "add", "-q", "--detach", str(target), "HEAD")
        diff = await git(project, "diff", "--binary", "HEAD")
        if diff.strip():
            await git(target, "apply", "--binary", "--whitespace=nowarn", "-", stdin=diff)
        untracked = (await git(project, "ls-files", "--others", "--exclude-standard", "-z")).split(b"\0")
        for raw in filter(None, untracked):
            relative = Path(os.fsdecode(raw))
            source, dest = project / relative, target / relative
            dest.parent.mkdir(parents=True, exist_ok=True)
            if source.is_symlink():
                dest.symlink_to(os.readlink(source))
            elif source.is_file():
                shutil.copy2(source, dest)
        return Workspace(root=target, base=await _commit_base(target), kind="worktree", project=project)
    try:
        shutil.copytree(project, target, symlinks=True, ignore=lambda _d, names: _SKIP_IN_COPY & set(names))
    except (OSError, shutil.Error) as exc:
        raise WorkspaceError(f"cannot copy {project} for the task: {exc}") from None
    await git(target, "init", "-q")
    return Workspace(root=target, base=await _commit_base(target), kind="copy", project=project)


async def task_patch(workspace: Workspace) -> bytes:
    """What the task changed, as one binary-safe patch against the base (b'' for nothing)."""
    await git(workspace.root, "add", "-A")
    return await git(workspace.root, "diff", "--cached", "--binary", workspace.base)


async def remove_workspace(workspace: Workspace) -> None:
    if workspace.kind == "worktree":
        await git(workspace.project, "worktree", "remove", "--force", str(workspace.root), check=False)
    shutil.rmtree(workspace.root, ignore_errors=True)


def scratch_parent() -> Path:
    """Where task workspaces go: a private temp directory outside every project, so a task never
    sees another task's files and the project's own tree is never searched through them."""
    try:
        return Path(tempfile.mkdtemp(prefix="mermaid-batch-"))
    except OSError as exc:
        raise UsageError(f"cannot make a temp directory for batch workspaces: {exc}") from None
