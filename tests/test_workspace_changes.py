"""What a stat snapshot (no git) reports for each kind of change, both ways it can find them: the
kernel's reports (inotify watches, the default on Linux) and one walk of the whole tree (the
fallback). Real trees, real changes; each case checks `changed_files()` and, where the earlier
content was kept, that the patch rebuilds the tree with `git apply`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mermaid_cli.run import workspace_stat
from mermaid_cli.run.workspace_diff import WorkspaceSnapshot

HAS_GIT = shutil.which("git") is not None
BIG = workspace_stat.EAGER_FILES + 10  # more files than are copied at the baseline


def _tree(root: Path, files: int = 0) -> None:
    (root / "src/pkg").mkdir(parents=True)
    (root / "src/edit.py").write_text("a = 1\nb = 2\n")
    (root / "src/keep.py").write_text("print('keep')\n")
    (root / "src/pkg/deep.py").write_text("deep\n")
    (root / "top.txt").write_text("top\n")
    for n in range(files):
        (root / f"bulk/{n % 40}").mkdir(parents=True, exist_ok=True)
        (root / f"bulk/{n % 40}/f{n}.txt").write_text(f"{n}\n")
    time.sleep(2 * workspace_stat.TICK_NS / 1e9)  # older than the baseline's clock tick


def _take(root: Path, watch: bool) -> WorkspaceSnapshot:
    snap = WorkspaceSnapshot.take(root)
    assert snap.stat is not None
    if watch:
        assert snap.stat.watch is not None, "inotify is expected on Linux"
    else:
        snap.stat.stop_watching()  # compare by walking the tree
    return snap


def _applies(project: Path, original: Path, diff: str, tmp: Path) -> None:
    patch = tmp / "run.diff"
    patch.write_text(diff, encoding="utf-8", errors="surrogateescape")
    subprocess.run(["git", "apply", str(patch)], cwd=original, check=True)
    got = sorted(p.relative_to(original).as_posix() for p in original.rglob("*") if not p.is_dir())
    want = sorted(p.relative_to(project).as_posix() for p in project.rglob("*") if not p.is_dir())
    assert got == want
    for rel in want:
        a, b = original / rel, project / rel
        assert (os.readlink(a) if a.is_symlink() else a.read_bytes()) == (
            os.readlink(b) if b.is_symlink() else b.read_bytes()
        )


WATCH = pytest.mark.parametrize("watch", [True, False], ids=["watch", "walk"])


@WATCH
@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_renaming_a_directory_creates_everything_under_its_new_name(tmp_path: Path, watch: bool) -> None:
    project = tmp_path / "p"
    _tree(project)
    original = tmp_path / "orig"
    shutil.copytree(project, original)
    snap = _take(project, watch)
    os.rename(project / "src", project / "lib")  # the files inside keep their ctimes
    os.rename(project / "top.txt", project / "moved.txt")
    assert snap.changed_files() == [
        "lib/edit.py",
        "lib/keep.py",
        "lib/pkg/deep.py",
        "moved.txt",
        "src/edit.py",
        "src/keep.py",
        "src/pkg/deep.py",
        "top.txt",
    ]
    _applies(project, original, snap.diff(), tmp_path)
    snap.close()


@WATCH
def test_a_directory_moved_in_from_outside_the_tree_is_created_whole(tmp_path: Path, watch: bool) -> None:
    project, outside = tmp_path / "p", tmp_path / "outside"
    _tree(project, BIG)
    (outside / "sub").mkdir(parents=True)
    (outside / "sub/x.txt").write_text("x\n")
    time.sleep(2 * workspace_stat.TICK_NS / 1e9)
    snap = _take(project, watch)
    os.rename(outside, project / "bulk/3/vendored")
    assert snap.changed_files() == ["bulk/3/vendored/sub/x.txt"]
    snap.close()


@WATCH
def test_a_directory_deleted_and_made_again_is_compared_entry_by_entry(tmp_path: Path, watch: bool) -> None:
    project = tmp_path / "p"
    _tree(project, BIG)
    snap = _take(project, watch)
    shutil.rmtree(project / "src")
    (project / "src").mkdir()  # a new directory under the old name: no watch, no kept entries
    (project / "src/edit.py").write_text("a = 1\nb = 2\n")  # same content, but a new file
    (project / "src/fresh.py").write_text("fresh\n")
    assert snap.changed_files() == ["src/edit.py", "src/fresh.py", "src/keep.py", "src/pkg/deep.py"]
    snap.close()


@WATCH
@pytest.mark.skipif(not HAS_GIT, reason="git not installed")
def test_symlinks_created_retargeted_and_replacing_a_file(tmp_path: Path, watch: bool) -> None:
    project = tmp_path / "p"
    _tree(project)
    os.symlink("src/keep.py", project / "link")
    time.sleep(2 * workspace_stat.TICK_NS / 1e9)
    original = tmp_path / "orig"
    shutil.copytree(project, original, symlinks=True)
    snap = _take(project, watch)
    os.symlink("top.txt", project / "new-link")
    os.unlink(project / "link")
    os.symlink("src/edit.py", project / "link")
    os.unlink(project / "src/keep.py")
    os.symlink("edit.py", project / "src/keep.py")
    assert snap.changed_files() == ["link", "new-link", "src/keep.py"]
    diff = snap.diff()
    # a file that became a symlink is a deletion and a creation, as git writes it
    assert "deleted file mode 100644" in diff and "new file mode 120000" in diff
    _applies(project, original, diff, tmp_path)
    snap.close()


@WATCH
def test_a_permission_only_change_in_a_large_tree_is_found(tmp_path: Path, watch: bool) -> None:
    project = tmp_path / "p"
    _tree(project, BIG)
    snap = _take(project, watch)
    os.chmod(project / "bulk/9/f9.txt", 0o755)
    assert snap.changed_files() == ["bulk/9/f9.txt"]
    assert snap.stat is not None
    (change,) = snap.stat.compare()
    assert change.kind == "modified" and change.new_mode is not None and change.new_mode & 0o111
    snap.close()


@WATCH
def test_same_size_edit_in_the_same_mtime_second_is_found(tmp_path: Path, watch: bool) -> None:
    project = tmp_path / "p"
    _tree(project, BIG)
    target = project / "bulk/5/f5.txt"
    before = os.stat(target)
    snap = _take(project, watch)
    target.write_text("9\n")  # same size; the mtime is put back to the same nanosecond
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(target).st_size == before.st_size
    assert snap.changed_files() == ["bulk/5/f5.txt"]
    snap.close()


@WATCH
def test_changes_after_a_comparison_during_the_run_are_found_too(tmp_path: Path, watch: bool) -> None:
    project = tmp_path / "p"
    _tree(project, BIG)
    snap = _take(project, watch)
    (project / "bulk/1/f1.txt").write_text("one\n")
    snap.changed()  # a tool batch ended: compared on the worker thread while the model answers
    assert snap.changed_files() == ["bulk/1/f1.txt"]
    (project / "bulk/1/f1.txt").write_text("again\n")
    (project / "bulk/2/f2.txt").unlink()
    (project / "bulk/2/new.txt").write_text("new\n")
    snap.changed()
    assert snap.changed_files() == ["bulk/1/f1.txt", "bulk/2/f2.txt", "bulk/2/new.txt"]
    snap.close()


@WATCH
def test_many_directories_changed_at_once(tmp_path: Path, watch: bool) -> None:
    """More directories than are searched one by one: the baseline is read in one pass."""
    project = tmp_path / "p"
    _tree(project, BIG)
    snap = _take(project, watch)
    expected = []
    for n in range(20):
        (project / f"bulk/{n}/added.txt").write_text("+\n")
        (project / f"bulk/{n}/f{n}.txt").unlink()
        expected += [f"bulk/{n}/added.txt", f"bulk/{n}/f{n}.txt"]
    for n in range(20, 40):
        shutil.rmtree(project / f"bulk/{n}")
        expected += [f"bulk/{n}/f{k}.txt" for k in range(n, BIG, 40)]
    assert snap.changed_files() == sorted(expected)
    snap.close()


def test_lost_kernel_events_fall_back_to_walking_the_tree(tmp_path: Path) -> None:
    project = tmp_path / "p"
    _tree(project, BIG)
    snap = _take(project, watch=True)
    a, b = project / "bulk/1/f1.txt", project / "bulk/1/f41.txt"
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    for n in range(limit // 2 + 10):  # alternating names: the kernel cannot merge the events
        os.utime(a, ns=(n, n))
        os.utime(b, ns=(n, n))
    (project / "bulk/2/f2.txt").write_text("changed\n")
    assert snap.stat is not None and snap.stat.watch is not None
    assert snap.stat.watch.drain() is None  # the queue overflowed
    assert snap.changed_files() == ["bulk/1/f1.txt", "bulk/1/f41.txt", "bulk/2/f2.txt"]
    snap.close()


def test_skipped_directories_stay_out_of_the_diff_both_ways(tmp_path: Path) -> None:
    project = tmp_path / "p"
    _tree(project, BIG)
    (project / "node_modules/pkg").mkdir(parents=True)
    for watch in (True, False):
        snap = _take(project, watch)
        (project / "node_modules/pkg/index.js").write_text(f"{watch}\n")
        (project / "bulk/4/.venv").mkdir(exist_ok=True)
        (project / "bulk/4/.venv/x").write_text("x\n")
        assert snap.changed_files() == []
        snap.close()


def test_a_project_reached_through_a_symlink_is_still_compared(tmp_path: Path) -> None:
    real = tmp_path / "real"
    _tree(real, BIG)
    os.symlink(real, tmp_path / "link")
    snap = WorkspaceSnapshot.take(tmp_path / "link")
    (real / "src/new.py").write_text("new\n")
    (real / "top.txt").write_text("changed\n")
    assert snap.changed_files() == ["src/new.py", "top.txt"]
    snap.close()


CHILD = """
import subprocess, sys
from pathlib import Path
from mermaid_cli.run.workspace_diff import WorkspaceSnapshot
root = Path(sys.argv[1])
subprocess.run(["mount", "--bind", str(root / "bulk/1"), str(root / "bulk/2")], check=True)
snap = WorkspaceSnapshot.take(root)
(root / "bulk/1/new.txt").write_text("new\\n")
print(" ".join(snap.changed_files()))
"""


@pytest.mark.skipif(
    subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0
    if shutil.which("unshare")
    else True,
    reason="needs a private mount namespace (unshare -m)",
)
def test_a_directory_mounted_twice_in_the_tree_is_seen_under_both_names(tmp_path: Path) -> None:
    project = tmp_path / "p"
    _tree(project, BIG)
    proc = subprocess.run(
        ["unshare", "-m", sys.executable, "-c", CHILD, str(project)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.split() == ["bulk/1/new.txt", "bulk/2/new.txt"]


def test_settled_snapshot_drops_its_kernel_watches_and_still_finds_later_changes(tmp_path: Path) -> None:
    """At the end of the model's work the watches go (closing a descriptor that still holds them
    waits for the kernel, ~15 ms of the exit); a comparison after that walks the tree."""
    project = tmp_path / "p"
    _tree(project, BIG)
    snap = _take(project, watch=True)
    (project / "bulk/1/f1.txt").write_text("one\n")
    snap.changed()
    assert snap.stat is not None and snap.stat.watch is not None
    fdinfo = Path(f"/proc/self/fdinfo/{snap.stat.watch.fd}")
    assert "inotify wd:" in fdinfo.read_text()
    snap.settle()
    assert "inotify wd:" not in fdinfo.read_text()
    assert snap.changed_files() == ["bulk/1/f1.txt"]
    (project / "bulk/2/f2.txt").write_text("later\n")
    snap.changed()
    assert snap.changed_files() == ["bulk/1/f1.txt", "bulk/2/f2.txt"]
    snap.close()
