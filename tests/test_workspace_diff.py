"""The run's workspace diff (issue 23): stat snapshots without git, git's own index with git.

Each case builds a real tree, takes the snapshot, changes the tree the way a tool or a shell
command would, and checks `changed_files()` and that the patch rebuilds the tree with `git apply`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import call, run_inprocess, run_mermaid, say, write_script
from hypothesis import given, settings
from hypothesis import strategies as st

from mermaid_cli.run import workspace_diff, workspace_stat
from mermaid_cli.run.workspace_diff import WorkspaceSnapshot

HAS_GIT = shutil.which("git") is not None


def _tree(root: Path, extra_files: int = 0) -> None:
    (root / "src").mkdir(parents=True)
    (root / "src/edit.py").write_text("a = 1\nb = 2\n")
    (root / "src/keep.py").write_text("print('keep')\n")
    (root / "gone.txt").write_text("bye\n")
    (root / "run.sh").write_text("echo hi\n")
    for n in range(extra_files):
        (root / f"bulk/{n % 40}").mkdir(parents=True, exist_ok=True)
        (root / f"bulk/{n % 40}/f{n}.txt").write_text(f"{n}\n")
    time.sleep(2 * workspace_stat.TICK_NS / 1e9)  # older than the baseline's clock tick


def _git_init(root: Path) -> None:
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.email=a@b", "-c", "user.name=n", "commit", "-qm", "i"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True)


def _mutate(root: Path) -> None:
    (root / "src/edit.py").write_text("a = 1\nb = 3\n")
    (root / "src/new.txt").write_text("new\n")
    (root / "gone.txt").unlink()
    os.chmod(root / "run.sh", 0o755)


def _applies(original: Path, project: Path, diff: str, tmp: Path) -> None:
    patch = tmp / "run.diff"
    patch.write_text(diff, encoding="utf-8", errors="surrogateescape")
    subprocess.run(["git", "apply", str(patch)], cwd=original, check=True)
    for rel in ("src/edit.py", "src/keep.py", "src/new.txt", "run.sh"):
        assert (original / rel).read_bytes() == (project / rel).read_bytes()
    assert not (original / "gone.txt").exists()
    assert os.stat(original / "run.sh").st_mode & 0o111


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
@pytest.mark.parametrize("use_git", [False, True])
def test_created_modified_deleted_and_mode_change(tmp_path: Path, use_git: bool) -> None:
    project = tmp_path / "p"
    _tree(project)
    if use_git:
        _git_init(project)
    original = tmp_path / "orig"
    shutil.copytree(project, original, ignore=shutil.ignore_patterns(".git"))
    snap = WorkspaceSnapshot.take(project)
    assert snap.git == use_git
    _mutate(project)
    assert sorted(snap.changed_files()) == ["gone.txt", "run.sh", "src/edit.py", "src/new.txt"]
    diff = snap.diff()
    assert "new mode 100755" in diff
    _applies(original, project, diff, tmp_path)
    snap.close()


def test_large_tree_is_not_copied_and_shell_changes_are_still_found(tmp_path: Path) -> None:
    project = tmp_path / "p"
    _tree(project, extra_files=workspace_stat.EAGER_FILES + 10)
    snap = WorkspaceSnapshot.take(project)
    assert snap.stat is not None and snap.stat.store.used == 0  # nothing read at the baseline
    snap.keep([project / "src/edit.py"])  # what the checkpoint hook does before a tool writes
    _mutate(project)
    # a shell command rewrites a file no tool announced
    subprocess.run("printf 'changed\\n' > bulk/3/f3.txt", shell=True, cwd=project, check=True)
    changed = snap.changed_files()
    assert sorted(changed) == ["bulk/3/f3.txt", "gone.txt", "run.sh", "src/edit.py", "src/new.txt"]
    diff = snap.diff()
    assert "-b = 2\n+b = 3\n" in diff  # the tool-written file was kept: a real hunk
    assert "+new\n" in diff  # created files need no earlier copy
    assert "# bulk/3/f3.txt was modified; its content before the run was not kept" in diff
    assert "# gone.txt was deleted" in diff


def test_same_size_edit_with_mtime_put_back_is_found(tmp_path: Path) -> None:
    project = tmp_path / "p"
    _tree(project, extra_files=workspace_stat.EAGER_FILES + 10)  # no eager copies: stat alone decides
    target = project / "bulk/5/f5.txt"
    before = os.stat(target)
    snap = WorkspaceSnapshot.take(project)
    target.write_text("9\n")  # same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # and the mtime put back
    assert os.stat(target).st_mtime_ns == before.st_mtime_ns
    assert snap.changed_files() == ["bulk/5/f5.txt"]  # the ctime moved: no call can set it back


def test_a_file_changed_in_the_baselines_own_tick_counts_as_changed(tmp_path: Path) -> None:
    project = tmp_path / "p"
    _tree(project, extra_files=workspace_stat.EAGER_FILES + 10)
    snap = WorkspaceSnapshot.take(project)
    assert snap.stat is not None
    # a ctime within one coarse clock tick of the baseline cannot be told from a later change
    stamp = snap.stat.since_ns - workspace_stat.TICK_NS // 2
    assert snap.stat.changed_since(stamp) and not snap.stat.changed_since(stamp - workspace_stat.TICK_NS)
    assert snap.changed_files() == []


def test_touch_with_a_kept_copy_is_not_a_change(tmp_path: Path) -> None:
    project = tmp_path / "p"
    _tree(project)  # small: every file is kept at the baseline
    snap = WorkspaceSnapshot.take(project)
    os.utime(project / "src/keep.py", ns=(1, 1))
    assert snap.changed_files() == []


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_refresh_after_a_tool_batch_is_reused_and_later_changes_are_not_lost(tmp_path: Path) -> None:
    project = tmp_path / "p"
    _tree(project)
    _git_init(project)
    snap = WorkspaceSnapshot.take(project)
    (project / "a.txt").write_text("a\n")
    snap.changed()  # a batch ended: compared on the worker thread
    assert snap.changed_files() == ["a.txt"]
    (project / "b.txt").write_text("b\n")
    snap.changed()
    assert sorted(snap.changed_files()) == ["a.txt", "b.txt"]
    snap.close()


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_git_snapshot_leaves_the_users_index_alone(tmp_path: Path) -> None:
    project = tmp_path / "p"
    _tree(project)
    _git_init(project)
    index = project / ".git/index"
    before = index.read_bytes()
    snap = WorkspaceSnapshot.take(project)
    (project / "untracked.txt").write_text("u\n")
    assert snap.changed_files() == ["untracked.txt"]
    snap.close()
    assert index.read_bytes() == before
    assert subprocess.run(
        ["git", "status", "--porcelain"], cwd=project, capture_output=True, text=True
    ).stdout == ("?? untracked.txt\n")


def test_run_in_a_large_tree_keeps_tool_writes_and_sees_shell_writes(project: Path, tmp_path: Path) -> None:
    _tree(project, extra_files=workspace_stat.EAGER_FILES + 10)
    script = write_script(
        tmp_path / "s.jsonl",
        [
            call(
                "edit_file",
                {"path": "src/edit.py", "target_content": "b = 2", "replacement_content": "b = 3"},
                "c1",
            ),
            call("execute_command", {"command": "printf 'x\\n' > bulk/7/f7.txt && rm gone.txt"}, "c2"),
            say("done"),
        ],
    )
    diff_path = tmp_path / "run.diff"
    out = run_inprocess(
        [
            "--json",
            "--safety",
            "full_access",
            "--diff-out",
            str(diff_path),
            "--model",
            f"replay/{script}",
            "x",
        ],
        project,
    )
    assert out.code == 0, out.stderr
    assert sorted(out.events[-1]["files_changed"]) == ["bulk/7/f7.txt", "gone.txt", "src/edit.py"]
    diff = diff_path.read_text()
    assert "-b = 2\n+b = 3\n" in diff  # kept through the checkpoint hook before edit_file wrote
    assert "# bulk/7/f7.txt was modified" in diff


@pytest.mark.skipif(not workspace_stat.find_works(Path(".")), reason="no GNU find")
def test_python_walker_finds_what_find_finds(tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "p"
    _tree(project)
    (project / "with space.txt").write_text("s\n")
    os.symlink("src/keep.py", project / "link")
    (project / "node_modules").mkdir()
    (project / "node_modules/skip.js").write_text("x\n")
    by_python = WorkspaceSnapshot.take(project)  # a small tree: listed in-process, no find yet
    monkeypatch.setattr(workspace_stat, "INLINE_WALK_ENTRIES", 0)
    by_find = WorkspaceSnapshot.take(project)
    assert by_python.stat is not None and by_find.stat is not None
    assert (by_python.stat.use_find, by_find.stat.use_find) == (None, True)
    by_python.stat.use_find = False
    by_python.stat.stop_watching()  # both compare by walking the tree: find against Python
    by_find.stat.stop_watching()
    assert sorted(by_python.stat.names.split(b"\0")) == sorted(by_find.stat.names.split(b"\0"))
    _mutate(project)
    shutil.rmtree(project / "src")
    (project / "node_modules/skip.js").write_text("y\n")
    expected = ["gone.txt", "run.sh", "src/edit.py", "src/keep.py"]
    assert by_find.changed_files() == by_python.changed_files() == expected


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_git_project_below_the_work_tree_top_reports_its_own_paths(tmp_path: Path) -> None:
    """The per-batch comparison (`git status`) names paths from the repository's top; the run's
    are relative to its project root, and changes outside it are not the run's."""
    top = tmp_path / "repo"
    _tree(top / "app")
    (top / "outside.txt").write_text("o\n")
    _git_init(top)
    snap = WorkspaceSnapshot.take(top / "app")
    (top / "app/src/edit.py").write_text("changed\n")
    (top / "app/src/new dir").mkdir()
    (top / "app/src/new dir/n.txt").write_text("n\n")
    (top / "app/gone.txt").unlink()
    (top / "outside.txt").write_text("changed too\n")
    (top / "outside-new.txt").write_text("new\n")
    assert sorted(snap.changed_files()) == ["gone.txt", "src/edit.py", "src/new dir/n.txt"]
    assert "outside" not in snap.diff()
    # after the diff staged the work tree, names still come out the same
    (top / "app/later.txt").write_text("l\n")
    snap.changed()
    assert sorted(snap.changed_files()) == ["gone.txt", "later.txt", "src/edit.py", "src/new dir/n.txt"]
    snap.close()


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_a_batch_ending_while_the_worker_compares_is_compared_by_the_worker(tmp_path: Path) -> None:
    """The end of the run then finds the comparison ready instead of running git again."""
    project = tmp_path / "p"
    _tree(project)
    _git_init(project)
    snap = WorkspaceSnapshot.take(project)
    time.sleep(1.0)  # a run long enough for comparisons on the worker (REFRESH_SHARE)
    (project / "a.txt").write_text("a\n")
    snap.changed()
    (project / "b.txt").write_text("b\n")
    snap.changed()  # usually while the first comparison still runs
    assert snap._worker is not None
    snap._worker.join()
    assert snap._result is not None and snap._result[0] == snap._generation
    assert sorted(snap._result[1]) == ["a.txt", "b.txt"]
    snap.close()


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_a_batch_ending_as_the_worker_stops_is_compared_all_the_same(tmp_path: Path) -> None:
    """The worker has decided it is done but its thread has not ended yet when a batch ends: that
    batch still gets its comparison (it was once taken for the busy worker's, and lost)."""
    import threading

    project = tmp_path / "p"
    _tree(project)
    _git_init(project)
    snap = WorkspaceSnapshot.take(project)
    time.sleep(1.0)  # a run long enough for comparisons on the worker (REFRESH_SHARE)
    decided, batch_ended = threading.Event(), threading.Event()
    refresh = snap._refresh

    def refresh_then_linger() -> None:
        refresh()
        decided.set()
        batch_ended.wait(5)  # the thread is still alive while the next batch ends

    snap._refresh = refresh_then_linger  # type: ignore[method-assign]
    (project / "a.txt").write_text("a\n")
    snap.changed()
    assert decided.wait(5)
    (project / "b.txt").write_text("b\n")
    snap.changed()
    batch_ended.set()
    assert snap._worker is not None
    snap._worker.join()
    assert snap._result is not None and snap._result[0] == snap._generation
    assert sorted(snap._result[1]) == ["a.txt", "b.txt"]
    snap.close()


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_settled_without_a_diff_the_private_index_goes_early_and_names_stay(tmp_path: Path) -> None:
    project = tmp_path / "p"
    _tree(project)
    _git_init(project)
    snap = WorkspaceSnapshot.take(project)
    assert snap.index is not None
    private = snap.index.tmp
    (project / "a.txt").write_text("a\n")
    snap.changed()
    snap.settle(diff_wanted=False)
    assert snap.changed_files() == ["a.txt"]
    with pytest.raises(RuntimeError):
        snap.diff()
    snap.close()
    assert not private.exists()


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_a_comparison_that_fails_when_the_run_settles_is_a_note_not_an_internal_error(
    project: Path, tmp_path: Path
) -> None:
    """The run's changes settle before the cleanups now; git failing there (the model removed
    the repository) still ends the run normally, with the diff's note on stderr."""
    _tree(project)
    _git_init(project)
    script = write_script(
        tmp_path / "s.jsonl",
        [call("execute_command", {"command": "rm -rf .git"}, "c1"), say("done")],
    )
    out = run_inprocess(["--json", "--safety", "full_access", "--model", f"replay/{script}", "x"], project)
    assert out.code == 0, out.stderr
    assert out.events[-1]["type"] == "result" and out.events[-1]["status"] == "success"
    assert "cannot compute the run's diff" in out.stderr


def test_a_watched_cheap_comparison_after_a_batch_runs_in_place(tmp_path: Path, monkeypatch) -> None:
    """With the kernel reporting changes, the comparison after a tool batch is done on the spot
    (no thread to start, no GIL handed back and forth) and is ready when the run ends."""
    import threading

    project = tmp_path / "p"
    project.mkdir()
    (project / "a.txt").write_text("a\n")
    snap = WorkspaceSnapshot.take(project)
    try:
        if snap.stat is None or snap.stat.watch is None:
            pytest.skip("no inotify watch on this kernel: the thread path is the only one")
        started: list[str] = []
        real_start = threading.Thread.start
        monkeypatch.setattr(
            threading.Thread, "start", lambda self: started.append(self.name) or real_start(self)
        )
        (project / "b.txt").write_text("b\n")
        snap.changed()
        assert started == [] and snap._worker is None
        assert snap._result is not None and "b.txt" in snap._result[1]
        assert snap.changed_files() == ["b.txt"]
    finally:
        snap.close()


# -- taken at start (`prestart`): the snapshot's git or find works while the run's modules load ---


def _logged_git_project(project: Path, tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """A git project; the environment of a run whose `git` logs each subcommand (then runs the real
    git) and whose temp dir is private; the log; the temp dir."""
    _tree(project)
    _git_init(project)
    bin_dir, log, tmp = tmp_path / "bin", tmp_path / "git.log", tmp_path / "tmp"
    bin_dir.mkdir()
    tmp.mkdir()
    wrapper = bin_dir / "git"
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexec {shutil.which("git")} "$@"\n')
    wrapper.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(tmp)}, log, tmp


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_a_real_run_takes_its_snapshot_once_from_the_start_and_leaves_no_private_index(
    project: Path, tmp_path: Path
) -> None:
    env, log, tmp = _logged_git_project(project, tmp_path)
    script = write_script(
        tmp_path / "s.jsonl", [call("write_file", {"path": "hello.txt", "content": "hi\n"}), say("ok")]
    )
    diff_path = tmp_path / "run.diff"
    args = ["exec", "--json", "--diff-out", str(diff_path), "--model", f"replay/{script}", "x"]
    out = run_mermaid(args, project, env=env)
    assert out.code == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1])["files_changed"] == ["hello.txt"]
    assert "+hi" in diff_path.read_text()
    writes = [line for line in log.read_text().splitlines() if "write-tree" in line]
    assert len(writes) == 1  # the snapshot begun at start was the run's: not taken twice
    assert list(tmp.iterdir()) == []


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_a_run_that_stops_before_its_snapshot_removes_the_one_begun_at_start(
    project: Path, tmp_path: Path
) -> None:
    env, log, tmp = _logged_git_project(project, tmp_path)
    out = run_mermaid(["exec", "--resume", "x", "--continue", "go"], project, env=env)
    assert out.code == 2 and "cannot be used together" in out.stderr
    assert "add -A" in log.read_text()  # it was begun, and then removed
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("use_git", [False, True] if HAS_GIT else [False])
def test_a_snapshot_begun_at_start_is_adopted_only_for_the_same_root_and_exclusions(
    tmp_path: Path, use_git: bool
) -> None:
    project = tmp_path / "p"
    _tree(project)
    if use_git:
        _git_init(project)
    workspace_diff.prestart(project, frozenset({"out.jsonl"}))
    adopted = workspace_diff.take_snapshot(project, frozenset({"out.jsonl"}))
    assert workspace_diff.take_snapshot(project, frozenset({"out.jsonl"})) is not adopted  # once only
    workspace_diff.prestart(project, frozenset())
    pending = workspace_diff._prestarted
    assert pending is not None
    other = workspace_diff.take_snapshot(project, frozenset({"out.jsonl"}))
    assert pending.snapshot is not None and pending.snapshot is not other
    if use_git:
        assert pending.snapshot.index is None  # closed: its private index is gone
    (project / "new.txt").write_text("n\n")
    for snap in (adopted, other):
        snap.changed()
        assert snap.changed_files() == ["new.txt"]
        snap.close()
    workspace_diff.discard_prestart()  # nothing pending: nothing to do


# -- git with the kernel's reports: `git status` of the reported paths only ---------------------

_NAMES = st.sampled_from(["a", "b", "c.txt", "d d", "[x]", ".gitignore", ".mermaid"])
_OPS = st.lists(
    st.tuples(
        st.sampled_from(["write", "append", "delete", "mkdir", "rmtree", "rename", "chmod", "link"]),
        st.lists(_NAMES, min_size=1, max_size=3).map("/".join),
        st.lists(_NAMES, min_size=1, max_size=3).map("/".join),
    ),
    max_size=8,
)


def _apply_op(root: Path, op: str, rel: str, other: str) -> None:
    path, target = root / rel, root / other
    try:
        if op == "write":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{rel}\n")
        elif op == "append":
            with path.open("a") as f:
                f.write("more\n")
        elif op == "delete":
            path.unlink()
        elif op == "mkdir":
            (path / "sub").mkdir(parents=True, exist_ok=True)
            (path / "sub" / "f.txt").write_text("f\n")
        elif op == "rmtree":
            shutil.rmtree(path)
        elif op == "rename":
            target.parent.mkdir(parents=True, exist_ok=True)
            path.rename(target)
        elif op == "chmod":
            os.chmod(path, 0o755)
        elif op == "link":
            os.symlink(other, path)
    except OSError:
        pass  # a name that is not there, or not a directory: the tree stays as it is


def _git_tree(root: Path) -> None:
    for rel in ("a/b", "a/c.txt", "b", "d d/[x]", "c.txt", "a/a/a"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"{rel}\n")
    (root / ".gitignore").write_text("ignored*\n")
    (root / "ignored.txt").write_text("i\n")
    _git_init(root)
    (root / "untracked").write_text("u\n")


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
@settings(max_examples=20, deadline=None)  # ~9 git processes an example
@given(ops=_OPS)
def test_git_with_the_kernels_reports_finds_what_a_whole_tree_status_finds(tmp_path_factory, ops) -> None:
    root = tmp_path_factory.mktemp("g")
    _git_tree(root)
    snap = WorkspaceSnapshot.take(root)
    assert snap.git_watch is not None and snap.index is not None and snap.git
    for op in ops:
        _apply_op(root, *op)
    reported = snap._reported_paths()
    whole = sorted(snap.index.names_since())
    assert sorted(snap.index.names_since(reported)) == whole
    snap.close()


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_the_snapshots_tree_is_written_only_for_a_diff_and_is_the_tree_the_run_found(
    tmp_path: Path, monkeypatch
) -> None:
    from mermaid_cli.run import workspace_diff

    calls: list[str] = []
    real = workspace_diff._git

    def recorded(root: Path, *args: str, env: dict[str, str] | None = None) -> bytes:
        calls.append(args[0])
        return real(root, *args, env=env)

    monkeypatch.setattr(workspace_diff, "_git", recorded)
    root = tmp_path / "g"
    _git_tree(root)
    snap = WorkspaceSnapshot.take(root)
    (root / "a/c.txt").write_text("changed after the snapshot\n")
    snap.changed()
    assert snap.changed_files() == ["a/c.txt"]
    assert "write-tree" not in calls  # a run without --diff-out never writes it
    diff = snap.diff()
    assert calls.count("write-tree") == 1
    assert "-a/c.txt\n" in diff and "+changed after the snapshot" in diff  # against the tree as found
    assert snap.diff() == diff and calls.count("write-tree") == 1  # written once
    snap.close()


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_git_with_the_kernels_reports_asks_git_about_what_changed_only(tmp_path: Path) -> None:
    root = tmp_path / "g"
    _git_tree(root)
    snap = WorkspaceSnapshot.take(root, frozenset({"record.jsonl"}))
    assert snap._reported_paths() == []
    assert snap.changed_files() == []  # nothing reported: no git call at all
    # Mermaid's own writes (its first session file makes `.mermaid/`; a --record target) are
    # reported by the kernel too, but no comparison could name them: still no git call
    (root / ".mermaid" / "conversations").mkdir(parents=True)
    (root / ".mermaid" / "conversations" / "s.jsonl").write_text("{}\n")
    (root / "record.jsonl").write_text("{}\n")
    assert snap._reported_paths() == [] and snap.changed_files() == []
    (root / "a/c.txt").write_text("changed\n")
    (root / "new/deep").mkdir(parents=True)
    (root / "new/deep/f.txt").write_text("f\n")
    snap.changed()  # may compare on the worker thread: changed_files() waits for it before the
    # test reads the kernel's reports itself (the worker drains them under the snapshot's lock)
    assert sorted(snap.changed_files()) == ["a/c.txt", "new/deep/f.txt"]
    assert snap._reported_paths() == ["a/c.txt", "new"]
    (root / ".gitignore").write_text("")  # reveals ignored.txt, which nobody touched
    assert snap._reported_paths() is None  # so git looks at the whole tree, as without the watch
    snap.changed()
    assert sorted(snap.changed_files()) == [".gitignore", "a/c.txt", "ignored.txt", "new/deep/f.txt"]
    snap.settle()
    assert snap._reported_paths() is None  # settled: the watch is released
    snap.close()


@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_mermaids_own_git_runs_nothing_the_repository_configures(tmp_path: Path) -> None:
    """The snapshot's git runs outside the sandbox: a `core.fsmonitor` or hooks path planted in
    `.git/config` must not run there."""
    project = tmp_path / "p"
    _tree(project)
    _git_init(project)
    marker = tmp_path / "ran"
    with (project / ".git" / "config").open("a") as config:
        config.write(f"[core]\n\tfsmonitor = touch {marker}\n\thooksPath = {tmp_path}\n")
    snap = WorkspaceSnapshot.take(project)
    (project / "new.txt").write_text("n\n")
    snap.changed()
    assert snap.changed_files() == ["new.txt"]
    assert "new.txt" in snap.diff()
    snap.close()
    assert not marker.exists()


def test_a_small_tree_starts_no_process_and_a_large_one_is_left_to_find(tmp_path: Path, monkeypatch) -> None:
    """Processes started while the run's modules load slow them down (issue 23): a small tree's
    snapshot lists it in-process, git or not; past the budget, `find` lists it as before."""
    spawned: list[str] = []
    real_popen_init = subprocess.Popen.__init__

    def logged(self, args, *rest, **kwargs):
        spawned.append(os.path.basename(str(args[0])))
        real_popen_init(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", logged)
    plain, repo = tmp_path / "plain", tmp_path / "repo"
    _tree(plain)
    _tree(repo)
    if HAS_GIT:
        _git_init(repo)
    spawned.clear()
    for root in (plain, repo) if HAS_GIT else (plain,):
        WorkspaceSnapshot.take(root).close()
    assert spawned == (["git"] if HAS_GIT else [])  # the git snapshot's `add -A`, nothing else
    monkeypatch.setattr(workspace_stat, "INLINE_WALK_ENTRIES", 3)
    spawned.clear()
    snap = WorkspaceSnapshot.take(plain)
    assert spawned and set(spawned) == {"find"}  # whether find works, then the listing (GNU find)
    assert snap.stat is not None and snap.stat.use_find is not None
    snap.close()
