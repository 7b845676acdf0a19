"""Finding a project's git repository without running git (`run/workspace_git`, issue 23).

Every case builds a real layout and asks real git the same question: whatever the fast path
answers (other than "unsure") must be git's answer, and the plain layouts must not be "unsure"
(or the fast path would never be taken).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mermaid_cli.run import workspace_diff
from mermaid_cli.run.workspace_git import UNSURE, find_index
from mermaid_cli.security.childenv import scrubbed_env

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in scrubbed_env(os.environ).items()
        if not k.startswith("GIT_") or k == "GIT_TERMINAL_PROMPT"
    }
    env.update(extra)
    return env


def _git_says(root: Path, env: dict[str, str]) -> tuple[Path, str] | None:
    proc = subprocess.run(
        [
            "git",
            "rev-parse",
            "--is-inside-work-tree",
            "--path-format=absolute",
            "--git-path",
            "index",
            "--show-prefix",
        ],
        cwd=root,
        env=env,
        capture_output=True,
    )
    lines = proc.stdout.decode().split("\n")
    if proc.returncode != 0 or len(lines) < 3 or lines[0] != "true":
        return None
    return Path(lines[1]), lines[2]


def _init(path: Path, *args: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", *args, str(path)], check=True, env=_env())
    return path


def _agrees(root: Path, env: dict[str, str] | None = None) -> object:
    env = env if env is not None else _env()
    ours = find_index(root, env)
    if ours != UNSURE:
        assert ours == _git_says(root, env)
    return ours


def test_a_plain_repository_is_read_without_git_at_its_top_and_below(tmp_path: Path) -> None:
    repo = _init(tmp_path / "repo")
    (repo / "a" / "b c").mkdir(parents=True)
    assert _agrees(repo) == (repo.resolve() / ".git" / "index", "")
    assert _agrees(repo / "a" / "b c") == (repo.resolve() / ".git" / "index", "a/b c/")


def test_a_nested_repository_is_its_own_and_a_symlinked_path_is_the_real_one(tmp_path: Path) -> None:
    outer = _init(tmp_path / "outer")
    inner = _init(outer / "vendor" / "inner")
    assert _agrees(inner / ".") == (inner.resolve() / ".git" / "index", "")
    (tmp_path / "link").symlink_to(outer / "vendor")
    assert _agrees(tmp_path / "link") == (outer.resolve() / ".git" / "index", "vendor/")


Layout = Callable[[Path], Path]


def _linked_worktree(tmp: Path) -> Path:
    repo = _init(tmp / "repo")
    subprocess.run(
        ["git", "-c", "user.email=a@b", "-c", "user.name=n", "commit", "-q", "--allow-empty", "-m", "i"],
        cwd=repo,
        check=True,
        env=_env(),
    )
    subprocess.run(["git", "worktree", "add", "-q", str(tmp / "wt")], cwd=repo, check=True, env=_env())
    return tmp / "wt"


def _configured(text: str) -> Layout:
    def layout(tmp: Path) -> Path:
        repo = _init(tmp / "repo")
        (tmp / "elsewhere").mkdir()
        with (repo / ".git" / "config").open("a") as config:
            config.write(text.replace("ELSEWHERE", str(tmp / "elsewhere")))
        (repo / "sub").mkdir()
        return repo / "sub"

    return layout


def _symlinked_dot_git(tmp: Path) -> Path:
    real = _init(tmp / "real")
    (tmp / "p").mkdir()
    (tmp / "p" / ".git").symlink_to(real / ".git")
    return tmp / "p"


def _stray_dot_git(tmp: Path) -> Path:
    (tmp / "p" / ".git").mkdir(parents=True)  # git passes over it and looks further up
    return tmp / "p"


def _bare(tmp: Path) -> Path:
    _init(tmp / "bare.git", "--bare")
    return tmp / "bare.git" / "refs"


def _inside_dot_git(tmp: Path) -> Path:
    return _init(tmp / "repo") / ".git" / "refs"


UNSURE_LAYOUTS: dict[str, Layout] = {
    "linked worktree (a .git file)": _linked_worktree,
    "core.worktree": _configured("[core]\n\tworktree = ELSEWHERE\n"),
    "bare = true": _configured("[core]\n\tbare = true\n"),
    "bare as a bare key": _configured("[core]\n\tbare\n"),
    "include": _configured("[include]\n\tpath = ELSEWHERE/x\n"),
    "includeIf": _configured('[includeIf "gitdir:/"]\n\tpath = ELSEWHERE/x\n'),
    "worktreeConfig": _configured("[extensions]\n\tworktreeConfig = true\n"),
    ".git is a symlink": _symlinked_dot_git,
    "an empty .git directory": _stray_dot_git,
    "a bare repository": _bare,
    "inside .git": _inside_dot_git,
}


@pytest.mark.parametrize("name", sorted(UNSURE_LAYOUTS))
def test_layouts_git_must_judge_are_left_to_git(tmp_path: Path, name: str) -> None:
    root = UNSURE_LAYOUTS[name](tmp_path)
    assert _agrees(root) == UNSURE


@pytest.mark.parametrize(
    "variable",
    [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_CEILING_DIRECTORIES",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_COUNT",
        "SUDO_UID",
    ],
)
def test_an_environment_git_reads_leaves_it_to_git(tmp_path: Path, variable: str) -> None:
    repo = _init(tmp_path / "repo")
    value = {"GIT_DIR": str(repo / ".git"), "GIT_CONFIG_COUNT": "0", "SUDO_UID": "0"}.get(
        variable, str(tmp_path)
    )
    assert _agrees(repo, _env(**{variable: value})) == UNSURE
    assert _agrees(repo, _env(GIT_TERMINAL_PROMPT="0")) != UNSURE  # (what scrubbed_env always sets)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand the repository to another user")
@pytest.mark.parametrize("owned", ["work tree", ".git"])
def test_a_repository_owned_by_someone_else_is_left_to_git(tmp_path: Path, owned: str) -> None:
    repo = _init(tmp_path / "repo")
    os.chown(repo if owned == "work tree" else repo / ".git", 65534, 65534)
    assert _agrees(repo) == UNSURE
    # git refuses it (safe.directory), as the caller will learn (no user or system config here)
    assert _git_says(repo, _env(HOME=str(tmp_path), GIT_CONFIG_NOSYSTEM="1")) is None


def test_no_repository_is_none_or_left_to_git_never_a_wrong_answer(tmp_path: Path) -> None:
    assert _agrees(tmp_path) in (None, UNSURE)  # (UNSURE where a mount lies between here and /)


def test_a_repository_above_a_filesystem_boundary_is_left_to_git(tmp_path: Path, monkeypatch) -> None:
    """git stops at a filesystem boundary; a walk that would cross one asks git."""
    repo = _init(tmp_path / "repo")
    (repo / "mnt").mkdir()
    mount_point = str((repo / "mnt").resolve())
    real_stat = os.stat

    def stat(path, *args, **kwargs):  # (see below for a real mount, which needs root)
        st = real_stat(path, *args, **kwargs)
        if os.fspath(path) == mount_point:
            return os.stat_result((st.st_mode, st.st_ino, st.st_dev + 1, *tuple(st)[3:]))
        return st

    monkeypatch.setattr(os, "stat", stat)
    assert find_index(repo / "mnt", _env()) == UNSURE
    assert find_index(repo, _env()) != UNSURE


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="mounting needs root and unshare"
)
def test_a_real_mount_point_below_a_repository_is_left_to_git(tmp_path: Path) -> None:
    repo = _init(tmp_path / "repo")
    (repo / "mnt").mkdir()
    probe = (
        "import os, subprocess, sys; from pathlib import Path;"
        "from mermaid_cli.run.workspace_git import find_index;"
        f"subprocess.run(['mount', '-t', 'tmpfs', 'tmpfs', {str(repo / 'mnt')!r}], check=True);"
        f"print(find_index(Path({str(repo / 'mnt')!r}), {{}}));"
        f"print(subprocess.run(['git', 'rev-parse', '--show-prefix'], cwd={str(repo / 'mnt')!r}).returncode)"
    )
    out = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["unsure", "128"]  # git stops at the boundary: "not a git repository"


def test_the_snapshot_asks_git_only_where_the_fast_path_is_unsure(tmp_path: Path, monkeypatch) -> None:
    calls: list[tuple[str, ...]] = []
    real = workspace_diff._git

    def logged(root: Path, *args: str, env: dict[str, str] | None = None) -> bytes:
        calls.append(args)
        return real(root, *args, env=env)

    monkeypatch.setattr(workspace_diff, "_git", logged)
    plain = _init(tmp_path / "plain")
    assert workspace_diff._git_index_path(plain) == (plain.resolve() / ".git" / "index", "")
    assert calls == []
    worktree = _linked_worktree(tmp_path / "w")
    found = workspace_diff._git_index_path(worktree)
    assert found is not None and found[0].parent.parent.name == "worktrees"
    assert [c[0] for c in calls] == ["rev-parse"]


# -- the watch's directory list ----------------------------------------------------------------


def _find_dirs(root: Path) -> list[str]:
    out = subprocess.run(
        [
            "find",
            ".",
            "(",
            "-type",
            "d",
            "-printf",
            "",
            "(",
            "-name",
            ".git",
            "-o",
            "-path",
            "./.mermaid",
            ")",
            "-prune",
            ")",
            "-o",
            "-type",
            "d",
            "-printf",
            r"%P\0",
        ],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    return sorted(d for d in out.decode("utf-8", "surrogateescape").split("\0") if d)


_NAMES = st.sampled_from(["a", "b", ".git", ".mermaid", "sp ace", "x\ny", "é", "-n"])


@settings(max_examples=40, deadline=None)
@given(paths=st.lists(st.lists(_NAMES, min_size=1, max_size=4), max_size=12), links=st.booleans())
def test_the_in_process_listing_is_what_find_lists(
    tmp_path_factory, paths: list[list[str]], links: bool
) -> None:
    root = tmp_path_factory.mktemp("tree")
    for parts in paths:
        (root.joinpath(*parts)).mkdir(parents=True, exist_ok=True)
        (root.joinpath(*parts) / "f.txt").write_text("f")
    if links:
        (root / "to-a").symlink_to(root / "a" if (root / "a").exists() else tmp_path_factory.getbasetemp())
    listed = workspace_diff._small_tree_dirs(root)
    assert listed is not None
    assert sorted(listed) == _find_dirs(root)


def test_a_tree_past_the_budget_is_left_to_find(tmp_path: Path) -> None:
    for n in range(30):
        (tmp_path / f"d{n}").mkdir()
    assert workspace_diff._small_tree_dirs(tmp_path, budget=30) is not None
    assert workspace_diff._small_tree_dirs(tmp_path, budget=29) is None
    watch = workspace_diff._git_tree_watch(tmp_path)  # over the default budget or not, all 31 dirs
    assert watch is not None and len(watch.paths) == 31
    watch.close()


@pytest.mark.parametrize("planted", ["fifo", "device", "directory"])
def test_a_config_that_is_no_regular_file_is_left_to_git_without_blocking(
    tmp_path: Path, planted: str
) -> None:
    """A hostile repository's `.git/config` as a FIFO would block a plain read forever (the run
    would hang on its snapshot); it is never read, and git (with its own timeout) decides."""
    repo = _init(tmp_path / "repo")
    config = repo / ".git" / "config"
    config.unlink()
    if planted == "fifo":
        os.mkfifo(config)
    elif planted == "device":
        config.symlink_to("/dev/zero")
    else:
        config.mkdir()
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(find_index(repo, _env())), daemon=True)
    worker.start()
    worker.join(10)
    assert done == [UNSURE]


@pytest.mark.parametrize(
    "config",
    [
        ["filter.x.clean", "sh -c 'touch {ran}; cat'"],
        ["filter.x.process", "sh -c 'touch {ran}'"],
        ["diff.x.textconv", "sh -c 'touch {ran}; cat \"$1\"' -"],
        ["diff.external", "sh -c 'touch {ran}'"],
    ],
)
def test_a_repository_config_that_runs_commands_never_runs_them_for_the_snapshot(
    tmp_path: Path, config: list[str]
) -> None:
    """A repository handed over with its `.git` (an archive, a checkout cloned as-is) is as hostile
    as its files: its filters and diff drivers ran from Mermaid's own `git add`/`diff`, outside
    any sandbox, in every mode. The snapshot is the stat one there, and what changed is the same."""
    ran = tmp_path / "RAN"
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "config", config[0], config[1].format(ran=ran)], check=True)
    (root / ".gitattributes").write_text("* filter=x diff=x\n")
    (root / "a.txt").write_text("one\n")
    snap = workspace_diff.WorkspaceSnapshot.take(root)
    try:
        assert not snap.git
        (root / "a.txt").write_text("two\n")
        (root / "new\nline.txt").write_text("x")
        assert sorted(snap.changed_files()) == ["a.txt", "new\nline.txt"]
        assert "two" in snap.diff()
    finally:
        snap.close()
    assert not ran.exists()


def test_a_name_with_a_newline_is_one_changed_file_in_a_git_snapshot(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "a.txt").write_text("one\n")
    snap = workspace_diff.WorkspaceSnapshot.take(root)
    try:
        assert snap.git
        (root / "a.txt").write_text("two\n")
        snap.changed()
        assert "two" in snap.diff()  # stages: later names come from `git diff --cached --name-only`
        (root / 'new\nline "q".txt').write_text("x")
        snap.changed()
        assert snap.index is not None and snap.index.staged
        assert sorted(snap.changed_files()) == ["a.txt", 'new\nline "q".txt']
    finally:
        snap.close()
