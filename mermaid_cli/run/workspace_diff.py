"""What a run changed in the project: a snapshot before the run and a unified diff after it.

With git, the snapshot is a private index (the user's index and work tree are never touched): it
starts as a copy of git's own index, so `git add -A` only rehashes files whose stat changed;
untracked-but-not-ignored files are included. Its tree object is written only when a diff needs
it (`git diff --binary` against it gives a patch `git apply` takes): a run without `--diff-out`
spawns one git process fewer while the run's modules load (issue 23). On Linux the kernel's
reports (`workspace_watch`, every directory but `.git` ones, watched before the work tree is
staged) narrow each comparison's `git status` to the paths reported changed. Without git,
`workspace_stat` keeps the names and the moment of the snapshot, and only the content a diff will
need (see there for the trade-off); the kernel's reports (`workspace_watch`) or one `find` tell
what to compare (`workspace_compare`).

Cost at the end of a run: after each batch of tool calls the runner calls `changed()`; when the
last comparison was cheap (<= REFRESH_MAX_S) and the worker has used at most REFRESH_SHARE of the
run's time so far, it is redone at once on a worker thread while the model answers (in place when
the kernel's change reports make it cost under INLINE_MAX_S), so the end of the run usually finds
the answer ready. Otherwise (a large tree, a long run of quick turns) the
comparison happens once, at the end. A background process, a cancelled call or `--verify` makes
the runner ask for a fresh one at the end.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mermaid_cli.run.workspace_git import UNSURE, config_runs_commands, find_index
from mermaid_cli.run.workspace_watch import INLINE_WALK_ENTRIES, TreeWatch
from mermaid_cli.security.childenv import SAFE_DIFF, SAFE_GIT, helper_env

if TYPE_CHECKING:  # the stat snapshot is a non-git tree's: a git one never loads it
    from mermaid_cli.run.workspace_stat import Change, StatSnapshot

#: a `git` of the snapshot that takes longer is stopped (the snapshot then falls back to stat)
GIT_TIMEOUT_SECS = 120
#: a comparison that took longer than this is not repeated after every tool batch
REFRESH_MAX_S = 0.5
#: comparisons on the worker take at most this share of the run's time so far: a long run of
#: quick turns compares at the end rather than after every batch
REFRESH_SHARE = 0.2
#: a stat comparison that last took at most this long is redone in place, not on a thread
INLINE_MAX_S = 0.002
#: more paths reported changed than this, and a git comparison runs over the whole tree
MAX_PATHSPECS = 2000
#: Mermaid's own directory in the project (sessions, project config): never a run's change
OWN_DIR = ".mermaid"


@functools.cache
def _exe(name: str) -> str:
    """A program's full path, found once: a bare name makes every spawn try each PATH entry in
    turn (an execve each, in the child the spawning thread waits for)."""
    return shutil.which(name) or name


#: the snapshot's `git` processes running now, for `abandon_git`
_running_git: set[subprocess.Popen[bytes]] = set()
_running_git_lock = threading.Lock()


def _git(root: Path, *args: str, env: dict[str, str] | None = None) -> bytes:
    argv = [_exe("git"), *SAFE_GIT, "-c", "core.quotepath=off", *args]
    with subprocess.Popen(
        argv,
        cwd=root,
        env=env if env is not None else helper_env(os.environ),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        with _running_git_lock:
            _running_git.add(proc)
        try:
            out, err = proc.communicate(timeout=GIT_TIMEOUT_SECS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
        finally:
            with _running_git_lock:
                _running_git.discard(proc)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, argv, out, err)
    return out


def abandon_git() -> None:
    """Kill the snapshot's `git` processes still running: the run has written its `result`
    without them (a signal or `--timeout` came first), and a `git` that hangs (a slow or stuck
    file system) must not keep the process from exiting. Their threads end with an error."""
    with _running_git_lock:
        running = list(_running_git)
    for proc in running:
        try:
            proc.kill()
        except OSError:  # already reaped
            pass


class _GitIndex:
    """A private index in a temp dir, seeded from the repository's own index."""

    def __init__(self, root: Path, index: Path, exclude: frozenset[str], prefix: str = "") -> None:
        self.root = root
        self.prefix = prefix  # `root` relative to the work tree's top ("" or "sub/dir/")
        #: the index holds the snapshot until the work tree is staged again (`diff_since`)
        self.staged = False
        self._tree: str | None = None  # the snapshot's tree object, once written
        self.tmp = Path(tempfile.mkdtemp(prefix="mermaid-idx-"))
        self.path = self.tmp / "index"
        if index.is_file():
            shutil.copyfile(index, self.path)  # git's stat cache: unchanged files are not rehashed
        self.env = dict(helper_env(os.environ), GIT_INDEX_FILE=str(self.path))
        self.pathspec = [
            "--",
            ".",
            f":(exclude){OWN_DIR}",
            *(f":(exclude,literal){r}" for r in sorted(exclude)),
        ]

    def add(self) -> None:
        _git(self.root, "add", "-A", *self.pathspec, env=self.env)

    def take(self) -> None:
        """Stage the work tree as the run finds it: from now on the index is the snapshot."""
        self.add()

    def tree(self) -> str:
        """The snapshot's tree object, written on first use: before it, nothing stages the work
        tree again (only `diff_since` does, and it asks for the tree first)."""
        if self._tree is None:
            if self.staged:
                raise RuntimeError("the snapshot's index was staged over before its tree was written")
            self._tree = _git(self.root, "write-tree", env=self.env).decode().strip()
        return self._tree

    def names_since(self, paths: list[str] | None = None) -> list[str]:
        """What differs from the snapshot: under `paths` (root-relative, a directory for its whole
        subtree) only, or everywhere when None."""
        if not self.staged:
            return self._unstaged_names(paths)
        tree = self.tree()
        self.add()
        out = _git(
            self.root, "diff", "--cached", "--name-only", "-z", "--no-renames", "--relative", *SAFE_DIFF, tree,
            env=self.env,
        )  # fmt: skip
        return [name for name in out.decode("utf-8", "replace").split("\0") if name]

    def _unstaged_names(self, paths: list[str] | None) -> list[str]:
        """While the index still holds the snapshot, one `git status` tells what changed: the work
        tree's column and the untracked files (an `add -A` and a `diff` were two git calls after
        every tool batch, the last one racing the model's final answer)."""
        if paths is None:
            pathspec = self.pathspec
        elif not paths:
            return []  # nothing reported changed
        else:  # the exclusions still apply: `:(exclude)` pathspecs narrow the positive ones
            pathspec = ["--", *(f":(literal){p}" for p in paths), *self.pathspec[2:]]
        out = _git(
            self.root,
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=dirty",  # as `add -A`: a submodule's new commit, not its edits
            *pathspec,
            env=self.env,
        )
        names = []
        for entry in out.decode("utf-8", "replace").split("\0"):
            # "XY path", repository-relative: X is HEAD against the index (not this run's doing)
            if len(entry) > 3 and (entry[:2] == "??" or entry[1] != " "):
                path = entry[3:]
                if path.startswith(self.prefix):
                    names.append(path[len(self.prefix) :])
        return names

    def diff_since(self) -> str:
        tree = self.tree()
        self.add()
        self.staged = True
        raw = _git(
            self.root,
            "diff",
            "--cached",
            "--binary",
            "--no-renames",
            "--relative",
            *SAFE_DIFF,
            tree,
            env=self.env,
        )
        return raw.decode("utf-8", "surrogateescape")

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


class WorkspaceSnapshot:
    """`exclude`: project-relative paths that are never the run's changes (the files Mermaid
    itself writes: the target of stdout, `--record`, `--diff-out`, `--output-last-message`)."""

    def __init__(self, root: Path, exclude: frozenset[str] = frozenset()) -> None:
        self.root = root
        self.exclude = exclude
        #: a git snapshot (`index`; kept as a mode once `settle` drops the index), else `stat`
        self.git = False
        self.index: _GitIndex | None = None
        #: with git: the kernel's reports of what changed, so a comparison asks git about those
        #: paths only (a `git status` of 30,000 files is ~0.1 s)
        self.git_watch: TreeWatch | None = None
        self.stat: StatSnapshot | None = None
        self._lock = threading.Lock()
        self._generation = 0  # bumped whenever the tree may have changed since the last comparison
        self._result: tuple[int, list[str], list[Change]] | None = None
        self._worker: threading.Thread | None = None
        self._last_cost = 0.0
        self._born = time.perf_counter()
        self._spent = 0.0  # seconds of comparisons run on the worker
        self._again = False  # a batch ended while the worker compared: it compares once more
        #: the worker has not yet decided to stop. Set and cleared under `_flags`, together with
        #: that decision: a thread still alive after it decided would lose an `_again`
        self._busy = False
        self._flags = threading.Lock()
        self._dropping: threading.Thread | None = None  # removes the private index (`settle`)

    # -- taking it ----------------------------------------------------------------------------
    @classmethod
    def take(cls, root: Path, exclude: frozenset[str] = frozenset()) -> WorkspaceSnapshot:
        snap = cls(root, exclude)
        start = time.perf_counter()
        found = _git_index_path(root) if shutil.which(_exe("git")) else None
        if found is not None:
            snap.git_watch = _git_tree_watch(root)  # before the work tree is staged: nothing falls between
            try:
                snap.index = _GitIndex(root, found[0], exclude, found[1])
                snap.index.take()
                snap.git = True
            except (subprocess.SubprocessError, OSError):
                if snap.index is not None:
                    snap.index.close()
                snap.index = None
                snap._stop_git_watch()
        if not snap.git:
            from mermaid_cli.run.workspace_stat import StatSnapshot

            snap.stat = StatSnapshot(root, exclude)
        # the first comparison is guessed to cost what the snapshot did, unless the kernel reports
        # the changes (then it costs what changed, and is redone after every tool batch)
        watched = snap.git_watch is not None or (snap.stat is not None and snap.stat.watch is not None)
        snap._last_cost = 0.0 if watched else time.perf_counter() - start
        return snap

    def keep(self, paths: list[Path]) -> None:
        """A tool is about to change `paths`: keep what the diff needs of them (stat mode)."""
        self._generation += 1
        if self.stat is not None:
            self.stat.keep(paths)

    def changed(self) -> None:
        """The tree may have changed (a batch of tool calls ended). A cheap comparison is redone
        now on a worker thread; an expensive one waits for the end of the run."""
        self._generation += 1
        with self._flags:
            if self._busy:
                # (a quick model answers before the last comparison is done: without this the
                # end of the run compared again, two git calls after the last response)
                self._again = True
                return
        if not self._worth_refreshing():
            return
        if self.stat is not None and self.stat.watch is not None and self._last_cost <= INLINE_MAX_S:
            # a comparison the kernel's change reports keep this cheap is pure Python: on a thread
            # it holds the GIL all the same, and starting the thread costs more than it does
            self._refresh()
            return
        self._busy = True  # (no worker is busy: nothing else sets it meanwhile)
        self._worker = threading.Thread(target=self._refresh, name="mermaid-diff", daemon=True)
        self._worker.start()

    def _worth_refreshing(self) -> bool:
        if self._last_cost > REFRESH_MAX_S:
            return False
        return self._spent + self._last_cost <= REFRESH_SHARE * (time.perf_counter() - self._born)

    def _refresh(self) -> None:
        again = True
        while again:
            compared = True
            try:
                start = time.perf_counter()
                try:
                    self._compute()
                finally:
                    self._spent += time.perf_counter() - start
            except Exception:  # noqa: BLE001 - the final comparison reports any error
                compared = False
            with self._flags:  # (one step: a batch ending now is either seen here or starts a worker)
                again = compared and self._again and self._worth_refreshing()
                self._again = False
                self._busy = again

    def _compute(self) -> tuple[list[str], list[Change]]:
        with self._lock:
            generation = self._generation
            start = time.perf_counter()
            if self.stat is not None:
                changes = self.stat.compare()
                names = [c.rel for c in changes]
            else:
                assert self.index is not None
                names, changes = self.index.names_since(self._reported_paths()), []
            self._last_cost = time.perf_counter() - start
            self._result = (generation, names, changes)
            return names, changes

    def _reported_paths(self) -> list[str] | None:
        """With git: the paths the kernel reported changed since the snapshot began (a directory
        entry for its whole subtree), but for Mermaid's own (`.mermaid/`, where the session file
        goes, and `exclude`), which the comparison's pathspec leaves out anyway: a run's first
        `.mermaid/` cost a `git status` after every tool batch; None when git must look at the
        whole tree (no watch, lost events, too many paths, or a changed `.gitignore`, which can
        reveal untouched files)."""
        if self.git_watch is None:
            return None
        reported = self.git_watch.drain()
        if reported is None:
            return None
        files, _dirs, gone = reported
        own = (OWN_DIR, *self.exclude)
        paths = {
            p
            for p in files | self.git_watch.subdirs | gone
            if not any(p == o or p.startswith(o + "/") for o in own)
        }
        if (
            "" in gone
            or len(paths) > MAX_PATHSPECS
            or any(p.rpartition("/")[2] == ".gitignore" for p in paths)
        ):
            return None
        return sorted(paths)

    def _stop_git_watch(self) -> None:
        if self.git_watch is not None:
            self.git_watch.close()
            self.git_watch = None

    def _current(self) -> tuple[list[str], list[Change]]:
        worker = self._worker
        if worker is not None:
            worker.join()
        result = self._result
        if result is not None and result[0] == self._generation:
            return result[1], result[2]
        return self._compute()

    def settle(self, diff_wanted: bool = True) -> None:
        """The run's changes are final (its tools are done): compare now if the last comparison
        is stale, and stop the kernel's reports early (closing a watch that still has them waits
        ~15 ms; see `TreeWatch.release`). A later `changed()` compares by walking. Without
        `diff_wanted` the private index is removed now, on a thread, beside the run's cleanups
        (removing a directory from /tmp took up to ~8 ms on a busy disk); `close` waits for it."""
        try:
            self._current()
        except Exception:  # noqa: BLE001 - the final comparison (`changed_files`) reports it
            return
        if self.stat is not None:
            self.stat.release_watch()
        if self.git_watch is not None:
            self.git_watch.release()  # a later comparison looks at the whole tree
        if self.index is not None and not diff_wanted:
            index, self.index = self.index, None
            self._dropping = threading.Thread(target=index.close, name="mermaid-diff-close", daemon=True)
            self._dropping.start()

    # -- comparing ----------------------------------------------------------------------------
    def changed_files(self) -> list[str]:
        return self._current()[0]

    def diff(self) -> str:
        names, changes = self._current()
        if self.git:
            if self.index is None:
                raise RuntimeError("the snapshot was settled without keeping its diff")
            return self.index.diff_since() if names else ""
        from mermaid_cli.run.workspace_patch import render

        assert self.stat is not None
        return render(self.root, changes, self.stat.store.get)

    def close(self) -> None:
        if self._worker is not None:
            self._worker.join()
        if self._dropping is not None:
            self._dropping.join()
        if self.index is not None:
            self.index.close()
            self.index = None
        self._stop_git_watch()
        if self.stat is not None:
            self.stat.stop_watching()


def track_tool_batches(
    on_message: Callable[[Any], int | None] | None, snapshot: Callable[[], WorkspaceSnapshot | None]
) -> Callable[[Any], int | None]:
    """Wrap the loop's `on_message`: a user message carrying tool results ends a batch of calls."""

    def wrapped(message: Any) -> int | None:
        snap = snapshot()
        if (
            snap is not None
            and message.role == "user"
            and any(b.type == "tool_result" for b in message.content)
        ):
            snap.changed()
        return on_message(message) if on_message is not None else None

    return wrapped


def keeping(
    checkpoint: Callable[[list[Path], str], object] | None, snapshot: Callable[[], WorkspaceSnapshot | None]
) -> Callable[[list[Path], str], object]:
    """Wrap the tools' checkpoint hook so the snapshot keeps what a tool is about to change."""

    def wrapped(paths: list[Path], reason: str) -> object:
        snap = snapshot()
        if snap is not None:
            snap.keep(paths)
        return checkpoint(paths, reason) if checkpoint is not None else None

    return wrapped


def own_files(root: Path, cwd: Path, names: tuple[str | None, ...], stdout: object) -> frozenset[str]:
    """Project-relative paths of the files Mermaid itself writes during a run: `names` (the
    `--record`, `--diff-out` and `--output-last-message` targets, relative to `cwd`) and the
    file stdout writes to."""
    targets = [cwd / name for name in names if name]
    stdout_file = stream_target(stdout)
    if stdout_file is not None:
        targets.append(stdout_file)
    own = set()
    for target in targets:
        try:
            own.add(target.resolve().relative_to(root).as_posix())
        except (ValueError, OSError):
            pass  # outside the project: never in its diff anyway
    return frozenset(own)


# -- taken at start ----------------------------------------------------------------------------


class _Prestart:
    """A snapshot taken on a thread from the moment the run's flags are parsed: its `git` or
    `find` process works on the other core while the run's modules load (~0.4 s), instead of
    after them, while the first request is in flight."""

    def __init__(self, root: Path, exclude: frozenset[str]) -> None:
        self.root, self.exclude = root, exclude
        self.snapshot: WorkspaceSnapshot | None = None
        self.error: Exception | None = None
        self.thread = threading.Thread(target=self._take, name="mermaid-snapshot", daemon=True)
        self.thread.start()

    def _take(self) -> None:
        try:
            self.snapshot = WorkspaceSnapshot.take(self.root, self.exclude)
        except Exception as exc:  # noqa: BLE001 - raised where the run takes it (`take_snapshot`)
            self.error = exc


_prestarted: _Prestart | None = None
_prestart_lock = threading.Lock()


def prestart(root: Path, exclude: frozenset[str]) -> None:
    """Start taking the run's snapshot of `root` now; `take_snapshot` adopts it and
    `discard_prestart` (at the exit) removes one nobody took. The snapshot is the project as the
    run found it: whatever the run does after this moment (hooks, MCP servers, tools) is its own."""
    global _prestarted
    with _prestart_lock:
        if _prestarted is None:
            _prestarted = _Prestart(root, exclude)


def _claim_prestart() -> _Prestart | None:
    global _prestarted
    with _prestart_lock:
        pre, _prestarted = _prestarted, None
    if pre is not None:
        pre.thread.join()
    return pre


def take_snapshot(root: Path, exclude: frozenset[str]) -> WorkspaceSnapshot:
    """The run's snapshot: the one `prestart` began when it was of this root with these
    exclusions, else a new one."""
    pre = _claim_prestart()
    if pre is not None:
        if (pre.root, pre.exclude) == (root, exclude):
            if pre.error is not None:
                raise pre.error
            assert pre.snapshot is not None
            return pre.snapshot
        if pre.snapshot is not None:
            pre.snapshot.close()  # of something else: its private index and watch go now
    return WorkspaceSnapshot.take(root, exclude)


def discard_prestart() -> None:
    """A prestarted snapshot the run never took (it ended first): wait for it and remove it, so no
    private index or watch outlives the process."""
    pre = _claim_prestart()
    if pre is not None and pre.snapshot is not None:
        pre.snapshot.close()


def stream_target(stream: object) -> Path | None:
    """The regular file an output stream writes to (`mermaid exec --json > events.jsonl`), or None
    for a pipe, a terminal or an in-memory buffer."""
    import stat

    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except (AttributeError, OSError, ValueError):
        return None


def _git_tree_watch(root: Path) -> TreeWatch | None:
    """A kernel watch of every directory under `root` but `.git` ones and the root's `.mermaid`
    (never the run's changes): a small tree's directories are listed here, a larger one's by one
    `find` that reads directories only; None where there is none (not Linux, no inotify, too many
    directories)."""
    if not sys.platform.startswith("linux"):
        return None
    dirs = _small_tree_dirs(root)
    if dirs is None:
        # `-printf ""` keeps find's optimiser from moving the name tests before `-type d` (see
        # workspace_stat._prune): otherwise every file's name is matched too
        prune = [*"( -type d -printf".split(), "", *f"( -name .git -o -path ./{OWN_DIR} ) -prune )".split()]
        try:
            out = subprocess.run(
                [_exe("find"), ".", *prune, "-o", "-type", "d", "-printf", r"%P\0"],
                cwd=root,
                env=helper_env(os.environ),
                capture_output=True,
                check=True,
                timeout=120,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        dirs = [d for d in out.decode("utf-8", "surrogateescape").split("\0") if d]
    try:
        return TreeWatch(root, ["", *dirs])
    except OSError:
        return None


def _small_tree_dirs(root: Path, budget: int = INLINE_WALK_ENTRIES) -> list[str] | None:
    """What the `find` in `_git_tree_watch` lists (every directory below `root`, relative, but
    `.git` ones and the root's `.mermaid`; symlinks not followed), read in-process while the tree
    has at most `budget` entries: a process started while the run's modules load slows them down.
    None past the budget, or where a directory cannot be read (find would fail there too)."""
    dirs: list[str] = []
    stack = [""]
    seen = 0
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(root / rel_dir if rel_dir else root) as it:
                for entry in it:
                    seen += 1
                    if seen > budget:
                        return None
                    if entry.name == ".git" or (not rel_dir and entry.name == OWN_DIR):
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                        dirs.append(rel)
                        stack.append(rel)
        except OSError:
            return None
    return dirs


def _git_index_path(root: Path) -> tuple[Path, str] | None:
    """The repository's index file and `root`'s path in the work tree ("" at its top, else
    "sub/dir/") when `root` is inside a git work tree: read without git in the plain case
    (`workspace_git`), else one git call."""
    env = helper_env(os.environ)
    found = find_index(root, env)
    if found != UNSURE:
        return None if found is not None and config_runs_commands(found[0].parent) else found
    try:
        out = _git(
            root,
            "rev-parse",
            "--is-inside-work-tree",
            "--path-format=absolute",
            "--git-path",
            "index",
            "--show-prefix",
            env=env,
        )
    except (subprocess.SubprocessError, OSError):
        return None
    lines = out.decode("utf-8", "surrogateescape").split("\n")
    if len(lines) < 3 or lines[0].strip() != "true":
        return None
    index = Path(lines[1].strip())
    # a config that runs commands on file contents: the stat snapshot instead (it runs nothing)
    return None if config_runs_commands(index.parent) else (index, lines[2])
