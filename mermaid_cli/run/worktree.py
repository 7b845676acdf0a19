"""`isolation: "worktree"` for a subagent: a private git worktree seeded with the project's
uncommitted state (tracked changes and untracked, unignored files), and the child's changes
brought back as one patch: checkpointed first, applied whole or not at all (a conflict is
reported with the patch saved, never forced). Outside a git repository it is refused.

Git runs with the repository's hooks (and fsmonitor, signing, pager), and the content filters and
diff drivers its own config names, switched off: they are the repository's code, not the
operator's, and Mermaid's own bookkeeping must not run them. `mermaid batch` makes its task
workspaces with the same pieces.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mermaid_cli.security.childenv import SAFE_DIFF, SAFE_GIT, helper_env

GIT_TIMEOUT = 120
_IDENTITY = {
    "GIT_AUTHOR_NAME": "mermaid",
    "GIT_AUTHOR_EMAIL": "mermaid@localhost",
    "GIT_COMMITTER_NAME": "mermaid",
    "GIT_COMMITTER_EMAIL": "mermaid@localhost",
}


class WorktreeError(Exception):
    """Why a worktree could not be made or its patch not applied (told to the parent's model)."""


#: git commands that read or write no file contents: no filter or diff driver can run in them
_NO_CONTENT = frozenset({"config", "rev-parse", "init", "worktree"})
#: per directory, the `-c` options that switch its repository's own drivers off (`_drivers_off`)
_DRIVERS_OFF: dict[str, tuple[str, ...]] = {}
_DRIVERS_LOCK = threading.Lock()


def git(args: list[str], cwd: Path, env: Mapping[str, str], stdin: bytes | None = None) -> bytes:
    """Run git for Mermaid's own bookkeeping (worktrees, seeds, patches): with `SAFE_GIT`, a fixed
    identity, no `GIT_*` variable of the caller's (a `GIT_DIR` would point it elsewhere), and none
    of the repository's own content filters or diff drivers (`_drivers_off`)."""
    clean = {k: v for k, v in helper_env(env).items() if not k.startswith("GIT_")}
    extra: tuple[str, ...] = () if args[0] in _NO_CONTENT else _drivers_off(cwd, env)
    if args[0] == "diff":
        args = ["diff", *SAFE_DIFF, *args[1:]]
    return _run_git([*extra, *args], cwd, clean, stdin)


def _drivers_off(cwd: Path, env: Mapping[str, str]) -> tuple[str, ...]:
    """`-c` options emptying every `filter.*`/`diff.*` command the repository's own config (its
    includes too) names: a repository handed over with its `.git` (an archive, a clone as-is) is
    as hostile as its files, and this git runs outside any sandbox. The user's own config (git
    LFS's filters, say) is left alone unless the repository's names the same driver."""
    key = str(cwd)
    with _DRIVERS_LOCK:
        if key in _DRIVERS_OFF:
            return _DRIVERS_OFF[key]
    pattern = r"^(filter|diff)\..*\.(clean|smudge|process|textconv|command)$"
    try:
        names = git(["config", "--local", "--includes", "--name-only", "--get-regexp", pattern], cwd, env)
    except WorktreeError:  # exit 1: none
        names = b""
    found: list[str] = []
    for name in names.decode("utf-8", "replace").split():
        found += ["-c", f"{name}="]
        if name.startswith("filter."):
            found += ["-c", f"{name.rsplit('.', 1)[0]}.required=false"]
    with _DRIVERS_LOCK:
        _DRIVERS_OFF[key] = tuple(found)
    return tuple(found)


def _run_git(args: list[str], cwd: Path, clean: Mapping[str, str], stdin: bytes | None) -> bytes:
    try:
        done = subprocess.run(
            ["git", *SAFE_GIT, *args],
            cwd=cwd,
            env={**clean, **_IDENTITY, "GIT_TERMINAL_PROMPT": "0"},
            input=stdin,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorktreeError(f"git {args[0]}: {exc}") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise WorktreeError(f"git {args[0]}: {message[-1] if message else f'exit {done.returncode}'}")
    return done.stdout


def commit_seed(path: Path, env: Mapping[str, str]) -> str:
    """Everything in `path` (but `.mermaid/`) committed as the base a patch is taken against."""
    git(["add", "-A", "--", ".", ":(exclude).mermaid"], path, env)
    git(["commit", "-q", "--allow-empty", "--no-verify", "-m", "mermaid: seed"], path, env)
    return git(["rev-parse", "HEAD"], path, env).decode().strip()


def patch_since(path: Path, seed: str, env: Mapping[str, str]) -> bytes:
    """What changed in `path` since `seed`, as one binary patch (new files included)."""
    git(["add", "-A", "--", ".", ":(exclude).mermaid"], path, env)
    return git(["diff", "--cached", "--binary", seed], path, env)


#: `git worktree add`/`remove`/`prune` on one repository from parallel jobs race on its
#: `.git/worktrees` entries ("failed to read .../commondir"): they run one at a time
_WORKTREE_ADMIN = threading.Lock()


@dataclass
class Worktree:
    """A child's private checkout; `project` is the project root's place inside it."""

    repo: Path
    path: Path
    project: Path
    seed: str
    env: Mapping[str, str]

    @classmethod
    async def create(cls, project_root: Path, env: Mapping[str, str]) -> Worktree:
        return await asyncio.to_thread(cls._create, project_root, env)

    @classmethod
    def _create(cls, project_root: Path, env: Mapping[str, str]) -> Worktree:
        try:
            top = git(["rev-parse", "--show-toplevel"], project_root, env).decode().strip()
        except WorktreeError as exc:
            raise WorktreeError(f"isolation 'worktree' needs a git repository ({exc})") from None
        repo = Path(top).resolve()
        try:
            git(["rev-parse", "--verify", "HEAD"], repo, env)
        except WorktreeError:
            raise WorktreeError("isolation 'worktree' needs a repository with at least one commit") from None
        path = Path(tempfile.mkdtemp(prefix="mermaid-worktree-"))
        with _WORKTREE_ADMIN:
            # checked out by our own `reset`: `worktree add`'s checkout runs smudge filters whatever
            # `-c` says
            git(["worktree", "add", "--no-checkout", "--detach", str(path), "HEAD"], repo, env)
        tree = cls(repo, path, path / project_root.resolve().relative_to(repo), "", env)
        try:
            git(["reset", "-q", "--hard", "HEAD"], path, env)
            tree._seed()
        except BaseException:
            tree.remove()
            raise
        return tree

    def _seed(self) -> None:
        """The parent's uncommitted state, committed in the worktree so the child's own changes
        are exactly what differs from it."""
        tracked = git(["diff", "HEAD", "--binary"], self.repo, self.env)
        if tracked.strip():
            git(["apply", "--binary", "--whitespace=nowarn"], self.path, self.env, stdin=tracked)
        untracked = git(["ls-files", "--others", "--exclude-standard", "-z"], self.repo, self.env)
        for name in filter(None, untracked.decode("utf-8", "surrogateescape").split("\0")):
            if name.startswith(".mermaid/") or "/.mermaid/" in name:
                continue  # the parent's sessions and checkpoints are not the child's work
            source, target = self.repo / name, self.path / name
            if source.is_file() and not source.is_symlink():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        self.seed = commit_seed(self.path, self.env)

    async def patch(self) -> bytes:
        """The child's changes as one binary patch against the seeded state."""
        return await asyncio.to_thread(self._patch)

    def _patch(self) -> bytes:
        return patch_since(self.path, self.seed, self.env)

    def remove(self) -> None:
        with _WORKTREE_ADMIN:
            try:
                git(["worktree", "remove", "--force", str(self.path)], self.repo, self.env)
            except WorktreeError:
                shutil.rmtree(self.path, ignore_errors=True)
                try:
                    git(["worktree", "prune"], self.repo, self.env)
                except WorktreeError:
                    pass


def changed_paths(patch: bytes) -> list[str]:
    """Repository-relative paths a patch touches (both sides of a rename)."""
    paths: list[str] = []
    for line in patch.decode("utf-8", "surrogateescape").splitlines():
        if line.startswith(("--- a/", "+++ b/")):
            name = line[6:]
            if name not in paths:
                paths.append(name)
    return paths


async def apply_patch(
    tree: Worktree, patch: bytes, *, checkpoint: Callable[[list[Path], str], object] | None, saved: Path
) -> list[str]:
    """Apply the child's patch to the project as one change, checkpointed first. A patch that does
    not apply cleanly is saved at `saved` and reported; nothing of it is applied."""
    paths = changed_paths(patch)

    def run() -> None:
        try:
            git(["apply", "--check", "--binary", "--whitespace=nowarn"], tree.repo, tree.env, stdin=patch)
        except WorktreeError as exc:
            saved.parent.mkdir(parents=True, exist_ok=True)
            saved.write_bytes(patch)
            raise WorktreeError(f"the subagent's patch does not apply ({exc}); saved at {saved}") from None
        if checkpoint is not None:
            checkpoint([tree.repo / p for p in paths], "subagent worktree patch")
        git(["apply", "--binary", "--whitespace=nowarn"], tree.repo, tree.env, stdin=patch)

    await asyncio.to_thread(run)
    return paths
