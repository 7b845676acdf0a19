"""Checkpoints: taken before mutations, listed, restored (and a restore is itself checkpointed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mermaid_cli.cli.checkpoints import checkpoints_command, restore_command
from mermaid_cli.store.checkpoints import CheckpointNotFound, CheckpointStore, default_data_dir
from mermaid_cli.tools.apply_patch import ApplyPatch
from mermaid_cli.tools.base import ToolContext
from mermaid_cli.tools.edit import EditFile
from mermaid_cli.tools.files import CreateDirectory, DeleteFile, WriteFile


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a = 1\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    return root


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def test_checkpoint_manifest_and_copies(project, data):
    store = CheckpointStore(data, project, session_id="s1")
    cid = store.checkpoint([project / "src" / "a.py", Path("new.txt")], "write_file")
    assert cid.startswith("checkpoint-")
    manifest = json.loads((data / "checkpoints" / cid / "manifest.json").read_text())
    assert manifest["id"] == cid and manifest["session"] == "s1" and manifest["reason"] == "write_file"
    assert manifest["created_at"] and manifest["project_path"] == str(project.resolve())
    files = {f["path"]: f for f in manifest["files"]}
    assert files["src/a.py"]["existed"] is True
    assert (data / "checkpoints" / cid / files["src/a.py"]["snapshot"]).read_text() == "a = 1\n"
    assert files["new.txt"]["existed"] is False and files["new.txt"]["snapshot"] is None


def test_missing_parent_directories_are_removed_on_restore(project, data):
    store = CheckpointStore(data, project, "s1")
    cid = store.checkpoint([project / "x" / "y" / "z.txt"], "write_file")
    (project / "x" / "y").mkdir(parents=True)
    (project / "x" / "y" / "z.txt").write_text("z")
    report = store.restore(cid)
    assert not (project / "x").exists() and sorted(report.deleted) == ["x", "x/y", "x/y/z.txt"]


def test_list_filters_by_session_and_project(project, data, tmp_path):
    one = CheckpointStore(data, project, "s1").checkpoint([project / "run.sh"], "a")
    two = CheckpointStore(data, project, "s2").checkpoint([project / "run.sh"], "b")
    other = tmp_path / "other"
    other.mkdir()
    CheckpointStore(data, other, "s1").checkpoint([other / "x"], "c")
    store = CheckpointStore(data, project, "s3")
    assert [m.id for m in store.list()] == [one, two]
    assert [m.id for m in store.list(session_id="s2")] == [two]
    assert len(store.list(all_projects=True)) == 3


def test_restore_puts_back_and_deletes_and_can_be_undone(project, data):
    store = CheckpointStore(data, project, "s1")
    cid = store.checkpoint([project / "src" / "a.py", project / "run.sh", project / "src" / "new.py"], "edit")
    (project / "src" / "a.py").write_text("a = 2\n")
    (project / "run.sh").unlink()
    (project / "src" / "new.py").write_text("created\n")
    report = store.restore(cid)
    assert (project / "src" / "a.py").read_text() == "a = 1\n"
    assert (project / "run.sh").read_text() == "#!/bin/sh\n" and (
        project / "run.sh"
    ).stat().st_mode & 0o777 == 0o755
    assert not (project / "src" / "new.py").exists()
    assert sorted(report.restored) == ["run.sh", "src/a.py"] and report.deleted == ["src/new.py"]
    # the restore was checkpointed first: restoring that brings the edited state back
    assert report.pre_restore_checkpoint is not None
    store.restore(report.pre_restore_checkpoint)
    assert (project / "src" / "a.py").read_text() == "a = 2\n"
    assert (project / "src" / "new.py").read_text() == "created\n"
    assert not (project / "run.sh").exists()
    with pytest.raises(CheckpointNotFound):
        store.restore("checkpoint-nope")
    with pytest.raises(CheckpointNotFound):
        store.restore("../../etc")


async def test_tools_checkpoint_before_every_mutation_and_restore_undoes_them(project, data):
    store = CheckpointStore(data, project, "run-1")
    ctx = ToolContext(project_root=project, session_id="run-1", checkpoint=store.checkpoint)
    await WriteFile().run(WriteFile.Args(path="src/a.py", content="a = 10\n"), ctx)
    await EditFile().run(EditFile.Args(path="src/a.py", target_content="10", replacement_content="20"), ctx)
    await ApplyPatch().run(
        ApplyPatch.Args(patch="*** Begin Patch\n*** Add File: b.txt\n+b\n*** End Patch"), ctx
    )
    await DeleteFile().run(DeleteFile.Args(path="run.sh"), ctx)
    await CreateDirectory().run(CreateDirectory.Args(path="out/deep"), ctx)
    items = store.list(session_id="run-1")
    assert [m.reason for m in items] == [
        "write_file",
        "edit_file",
        "apply_patch",
        "delete_file",
        "create_directory",
    ]
    for manifest in reversed(items):
        store.restore(manifest.id)
    assert (project / "src" / "a.py").read_text() == "a = 1\n"
    assert not (project / "b.txt").exists() and (project / "run.sh").exists()
    assert not (project / "out").exists()


def test_default_data_dir_honours_env(monkeypatch, tmp_path):
    monkeypatch.setenv("MERMAID_DATA_DIR", str(tmp_path / "d"))
    assert default_data_dir() == tmp_path / "d"


def test_cli_commands(project, data):
    store = CheckpointStore(data, project, "sess")
    cid = store.checkpoint([project / "src" / "a.py"], "write_file")
    (project / "src" / "a.py").write_text("changed\n")
    runner = CliRunner()
    env = {"MERMAID_DATA_DIR": str(data)}
    result = runner.invoke(checkpoints_command, ["--json", "--path", str(project)], env=env)
    assert result.exit_code == 0 and [m["id"] for m in json.loads(result.output)] == [cid]
    result = runner.invoke(
        checkpoints_command, ["--session", "other", "--json", "--path", str(project)], env=env
    )
    assert json.loads(result.output) == []
    result = runner.invoke(checkpoints_command, ["--path", str(project)], env=env)
    assert cid in result.output and "write_file" in result.output
    result = runner.invoke(restore_command, [cid, "--path", str(project)], env=env)
    assert result.exit_code == 0 and "restored src/a.py" in result.output
    assert (project / "src" / "a.py").read_text() == "a = 1\n"
    result = runner.invoke(restore_command, ["checkpoint-missing", "--path", str(project)], env=env)
    assert result.exit_code == 2 and "unknown checkpoint" in result.output


def test_a_checkpoint_never_copies_what_a_swapped_directory_points_at(tmp_path: Path, monkeypatch) -> None:
    """The store resolves a path, then copies it; a directory on the way swapped for a symlink in
    between (to `~/.ssh`, say) must not land its target's content in the data directory."""
    from mermaid_cli.store import checkpoints

    project, secret_dir = tmp_path / "p", tmp_path / "home" / ".ssh"
    project.mkdir()
    secret_dir.mkdir(parents=True)
    (secret_dir / "id_rsa").write_text("SECRETKEY\n")
    (project / "s").symlink_to(secret_dir)  # swapped in after the store resolved `s/id_rsa`
    store = CheckpointStore(tmp_path / "data", project, "sess")
    monkeypatch.setattr(store, "_absolute", lambda raw: project / "s" / "id_rsa")  # the stale resolution
    with pytest.raises(OSError, match="changed while being checkpointed"):
        store.checkpoint([project / "s" / "id_rsa"], "write")
    kept = [p.read_text() for p in (tmp_path / "data").rglob("*") if p.is_file()]
    assert not any("SECRETKEY" in text for text in kept)
    checkpoints._copy_exactly(secret_dir / "id_rsa", tmp_path / "copy")  # the file itself: copied
    assert (tmp_path / "copy").read_text() == "SECRETKEY\n"


def test_a_checkpoint_obeys_the_gates_path_rules_for_what_it_resolves_itself(
    tmp_path: Path, monkeypatch
) -> None:
    """Mid-swap, the store's own resolution can land on the secret itself: the gate's rules
    (`refuse`) keep it from being copied."""
    project, secret = tmp_path / "p", tmp_path / "home" / ".ssh" / "id_rsa"
    project.mkdir()
    secret.parent.mkdir(parents=True)
    secret.write_text("SECRETKEY\n")
    refuse = lambda path: "a secret" if path.startswith(str(secret.parent)) else None  # noqa: E731
    store = CheckpointStore(tmp_path / "data", project, "sess", refuse=refuse)
    monkeypatch.setattr(store, "_absolute", lambda raw: secret)
    with pytest.raises(OSError, match="not checkpointed: a secret"):
        store.checkpoint([project / "safe" / "id_rsa"], "write")
    assert not any("SECRETKEY" in p.read_text() for p in (tmp_path / "data").rglob("*") if p.is_file())


@pytest.mark.parametrize("tool", ["write_file", "delete_file"])
def test_a_fifo_is_refused_not_checkpointed_forever(project, tmp_path, tool):
    """Checkpointing a FIFO opened it blocking on the event loop's thread: the run hung past
    --timeout and SIGTERM with no `result`. Now the call fails and the run goes on."""
    import os
    import subprocess
    import sys

    from conftest import call, say, write_script

    os.mkfifo(project / "fifo")
    args = {"path": "fifo", "content": "x"} if tool == "write_file" else {"path": "fifo"}
    script = write_script(tmp_path / "s.jsonl", [call(tool, args), say("done")])
    done = subprocess.run(
        [sys.executable, "-m", "mermaid_cli", "exec", "--json", "--safety", "full_access", "--timeout", "20",
         "--model", f"replay/{script}", "go"],
        cwd=project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["type"] == "result" and events[-1]["status"] == "success", done.stderr
    [finished] = [e for e in events if e["type"] == "tool_finished"]
    assert finished["status"] == "error" and "not a regular file" in finished["error"]


def test_a_checkpoint_that_cannot_be_taken_says_so_not_the_project_file(project, tmp_path):
    """A read-only data directory read as `hello.txt: Read-only file system`, as if the project were."""
    import asyncio
    import errno

    def refuse(paths, reason):
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path / "data" / "checkpoints"))

    ctx = ToolContext(project_root=project, checkpoint=refuse)
    result = asyncio.run(WriteFile().run(WriteFile.Args(path="src/a.py", content="b = 2\n"), ctx))
    assert result.is_error and "no checkpoint could be taken" in result.content
    assert "data/checkpoints" in result.content and "not changed" in result.content
    assert (project / "src" / "a.py").read_text() == "a = 1\n"
