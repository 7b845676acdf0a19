"""Issue 6's run features: --output-schema, --verify rounds, files_changed and --diff-out."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from conftest import call, run_inprocess, say, write_script

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"enum": ["approve", "reject"]}, "issues": {"type": "array"}},
    "required": ["verdict"],
}


def _schema(project, schema=SCHEMA):
    path = project / "schema.json"
    path.write_text(json.dumps(schema))
    return path


def test_structured_output_success_strips_one_fence(project):
    script = write_script(
        project / "s.jsonl", [say("Looks fine."), say('```json\n{"verdict": "approve", "issues": []}\n```')]
    )
    out = run_inprocess(
        ["--json", "--output-schema", str(_schema(project)), "--model", f"replay/{script}", "review"], project
    )
    result = out.events[-1]
    assert out.code == 0, out.stderr
    assert result["structured_output"] == {"verdict": "approve", "issues": []}
    assert json.loads(result["response"]) == {"verdict": "approve", "issues": []}


def test_structured_output_that_does_not_conform_is_exit_1(project):
    script = write_script(project / "s.jsonl", [say("Hmm."), say('{"verdict": "maybe"}')])
    out = run_inprocess(
        ["--json", "--output-schema", str(_schema(project)), "--model", f"replay/{script}", "review"], project
    )
    result = out.events[-1]
    assert out.code == 1 and result["status"] == "failed"
    assert "structured_output" not in result
    assert result["errors"][-1].startswith("output_schema: response does not conform: verdict:")


def test_structured_output_not_json_is_exit_1(project):
    script = write_script(project / "s.jsonl", [say("Hmm."), say("I approve!")])
    out = run_inprocess(
        ["--json", "--output-schema", str(_schema(project)), "--model", f"replay/{script}", "review"], project
    )
    assert out.code == 1 and out.events[-1]["errors"][-1].startswith(
        "output_schema: response is not valid JSON"
    )


@pytest.mark.parametrize(
    "content,needle",
    [
        ("[1, 2]", "must be a JSON object"),
        ("{not json", "not valid JSON"),
        ('{"type": 12}', "not a valid JSON Schema"),
        ('{"description": "' + "x" * 70000 + '"}', "64 KiB"),
    ],
)
def test_bad_schema_files_are_exit_2_before_any_model_call(project, content, needle):
    (project / "bad.json").write_text(content)
    script = write_script(project / "s.jsonl", [])  # any model call would exhaust the replay (exit 5)
    out = run_inprocess(
        ["--json", "--output-schema", "bad.json", "--model", f"replay/{script}", "x"], project
    )
    assert out.code == 2 and needle in out.events[-1]["errors"][-1]


def test_verify_passes_on_the_second_round(project):
    script = write_script(
        project / "s.jsonl",
        [
            call("write_file", {"path": "a.txt", "content": "bad\n"}, "c1"),
            say("done"),
            call("write_file", {"path": "a.txt", "content": "good\n"}, "c2"),
            say("fixed"),
        ],
    )
    out = run_inprocess(
        ["--json", "--verify", "grep -q good a.txt", "--model", f"replay/{script}", "make it good"], project
    )
    assert out.code == 0, out.stderr
    verifies = [e for e in out.events if e["type"] == "verify_finished"]
    assert [(v["attempt"], v["exit_code"]) for v in verifies] == [(1, 1), (2, 0)]
    assert out.events[-1]["response"] == "fixed"


def test_verify_still_failing_is_exit_1_naming_the_command(project):
    script = write_script(project / "s.jsonl", [say("done"), say("tried"), say("tried again")])
    out = run_inprocess(
        ["--json", "--verify", "exit 3", "--verify-attempts", "1", "--model", f"replay/{script}", "x"],
        project,
    )
    result = out.events[-1]
    assert out.code == 1 and result["status"] == "failed"
    assert "verify: `exit 3` still fails (exit 3)" in result["errors"][-1]
    assert [v["attempt"] for v in out.events if v["type"] == "verify_finished"] == [1, 2]


def _make_tree(root):
    (root / "src").mkdir()
    (root / "src/keep.py").write_text("print('keep')\n")
    (root / "src/edit.py").write_text("a = 1\nb = 2\n")
    (root / "gone.txt").write_text("bye\n")


@pytest.mark.parametrize("use_git", [False, True])
def test_diff_out_reproduces_the_changed_tree(project, tmp_path, use_git):
    if use_git and not shutil.which("git"):
        pytest.skip("git not installed")
    _make_tree(project)
    if use_git:
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
        subprocess.run(["git", "add", "-A"], cwd=project, check=True)
        subprocess.run(
            ["git", "-c", "user.email=a@b", "-c", "user.name=n", "commit", "-qm", "init"],
            cwd=project,
            check=True,
        )
    original = tmp_path / "original"
    shutil.copytree(project, original, ignore=shutil.ignore_patterns(".git"))
    script = write_script(
        tmp_path / "s.jsonl",
        [
            call(
                "edit_file",
                {"path": "src/edit.py", "target_content": "b = 2", "replacement_content": "b = 3"},
                "c1",
            ),
            call("execute_command", {"command": "rm gone.txt && printf 'new\\n' > src/new.txt"}, "c2"),
            say("done"),
        ],
    )
    out = run_inprocess(
        [
            "--json",
            "--safety",
            "full_access",
            "--diff-out",
            str(tmp_path / "run.diff"),
            "--model",
            f"replay/{script}",
            "x",
        ],
        project,
    )
    assert out.code == 0, out.stderr
    assert sorted(out.events[-1]["files_changed"]) == ["gone.txt", "src/edit.py", "src/new.txt"]
    subprocess.run(["git", "apply", str(tmp_path / "run.diff")], cwd=original, check=True) if shutil.which(
        "git"
    ) else subprocess.run(["patch", "-p1", "-i", str(tmp_path / "run.diff")], cwd=original, check=True)
    for rel in ("src/keep.py", "src/edit.py", "src/new.txt"):
        assert (original / rel).read_text() == (project / rel).read_text()
    assert not (original / "gone.txt").exists()


@pytest.mark.parametrize("use_git", [False, True])
def test_files_mermaid_writes_are_not_the_runs_changes(project, tmp_path, use_git):
    # docs/ci.md's recipe: `mermaid exec --json ... > events.jsonl` inside the project
    if use_git and not shutil.which("git"):
        pytest.skip("git not installed")
    _make_tree(project)
    if use_git:
        subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    script = write_script(
        tmp_path / "s.jsonl",
        [call("write_file", {"path": "made.txt", "content": "x\n"}, "c1"), say("done")],
    )
    args = ["--json", "--record", "rec.jsonl", "--diff-out", "run.diff", "--output-last-message", "last.md"]
    with open(project / "events.jsonl", "wb") as stdout:
        proc = subprocess.run(
            [sys.executable, "-m", "mermaid_cli", "exec", *args, "--model", f"replay/{script}", "x"],
            cwd=project,
            stdout=stdout,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 0, proc.stderr
    result = json.loads((project / "events.jsonl").read_text().splitlines()[-1])
    assert result["files_changed"] == ["made.txt"]
    diff = (project / "run.diff").read_text()
    assert "made.txt" in diff
    for own in ("events.jsonl", "rec.jsonl", "run.diff", "last.md", ".mermaid"):
        assert own not in diff
