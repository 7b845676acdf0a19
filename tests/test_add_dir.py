"""`--add-dir DIR`: extra directories the gate, the file tools and the kernel sandbox treat as
inside the project (security/paths.py's `locate` and the sandbox's writable roots), resolved with
symlinks followed; a bad one is exit 2 with a result line."""

from __future__ import annotations

import os

import pytest
from conftest import call, run_inprocess, say, write_script

from mermaid_cli.security.paths import PathRefused, locate, set_added_dirs


def _run(project, turns, *args):
    script = write_script(project.parent / "script.jsonl", turns)
    return run_inprocess(["--json", "--model", f"replay/{script}", *args, "go"], project)


@pytest.fixture
def extra(tmp_path):
    d = tmp_path / "extra"
    d.mkdir()
    return d


def test_locate_counts_an_added_dir_as_inside_with_its_own_root(tmp_path, extra):
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "link").symlink_to(extra)
    assert not locate(project, str(extra / "a.txt")).inside
    import contextvars

    def inner():
        assert set_added_dirs(["link"], tmp_path) == (str(extra.resolve()),)
        found = locate(project, str(extra / "a.txt"))
        assert found.inside and found.added and found.root == extra.resolve()
        assert not locate(project, str(tmp_path / "elsewhere.txt")).inside
        assert locate(project, "b.txt").inside and not locate(project, "b.txt").added

    contextvars.copy_context().run(inner)
    assert not locate(project, str(extra / "a.txt")).inside  # scoped to that context


def test_set_added_dirs_refuses_a_file_and_the_root(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(PathRefused, match="not a directory"):
        set_added_dirs(["f"], tmp_path)
    with pytest.raises(PathRefused, match="whole filesystem"):
        set_added_dirs(["/"], tmp_path)


def test_write_file_into_an_added_dir_runs_like_an_in_project_edit(project, extra):
    target = extra / "notes.txt"
    turns = [call("write_file", {"path": str(target), "content": "hi\n"}), say("done")]
    out = _run(project, turns, "--safety", "auto")
    assert not target.exists(), out.stdout  # outside the project: not an unvetted edit
    out = _run(project, turns, "--safety", "auto", "--add-dir", str(extra))
    assert out.code == 0, out.stdout
    assert target.read_text() == "hi\n"
    assert out.events[-1]["files_changed"] == [str(target.resolve())]


def test_the_sandbox_lets_commands_write_in_an_added_dir(project, extra):
    target = extra / "made.txt"
    turns = [call("execute_command", {"command": f"touch {target}"}), say("done")]
    out = _run(project, turns, "--safety", "full_access", "--sandbox=on")
    started = out.events[0]
    if not started.get("sandbox", {}).get("filesystem"):
        pytest.fail("this test needs the Landlock sandbox (see `mermaid doctor`)")
    assert not target.exists(), out.stdout  # the kernel refused: not a writable root
    out = _run(project, turns, "--safety", "full_access", "--sandbox=on", "--add-dir", str(extra))
    assert out.code == 0, out.stdout
    assert target.exists(), out.stdout


def test_a_missing_add_dir_is_exit_2_with_a_result_line(project):
    out = _run(project, [say("x")], "--add-dir", "nope")
    assert out.code == 2
    assert out.events[-1]["type"] == "result"
    assert "--add-dir nope: not a directory" in out.events[-1]["errors"][0]
    assert os.listdir(project) == [] or ".mermaid" in os.listdir(project)
