"""`mermaid batch`: real `mermaid exec` children on scripted models, real git worktrees."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import call, plant_shadows, run_mermaid, say, write_script

GIT_ID = ["-c", "user.name=t", "-c", "user.email=t@t"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(project: Path) -> Path:
    git(project, "init", "-q")
    (project / "README.md").write_text("base\n")
    git(project, "add", ".")
    git(project, "commit", "-qm", "init")
    return project


def writer_script(scripts: Path, task_id: str, name: str | None = None, content: str = "hi\n") -> str:
    """A scripted model that writes NAME (default TASK.txt) and answers."""
    scripts.mkdir(exist_ok=True)
    path = write_script(
        scripts / f"{task_id}.jsonl",
        [call("write_file", {"path": name or f"{task_id}.txt", "content": content}), say(f"{task_id} done")],
    )
    return f"replay/{path}"


def tasks_file(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def results(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def task_lines(path: Path) -> dict[str, dict]:
    return {row["task_id"]: row for row in results(path) if row["type"] == "task_result"}


def test_twelve_tasks_four_jobs_isolated_with_the_worst_exit_code(repo, tmp_path):
    scripts = tmp_path / "scripts"
    rows = [
        {"id": f"t{i:02d}", "prompt": "write your file", "model": writer_script(scripts, f"t{i:02d}")}
        for i in range(10)
    ]
    # one task whose script ends too early (replay exhausted: provider_error, exit 5) and one that
    # finishes but fails its verify command (failed, exit 1): the batch takes the worst, 5
    short = write_script(scripts / "short.jsonl", [call("read_file", {"path": "README.md"})])
    rows.append({"id": "short", "prompt": "p", "model": f"replay/{short}"})
    # its verify command fails every round: the model answers each of the 2 extra rounds
    failing = write_script(scripts / "verify.jsonl", [say("done"), say("tried"), say("tried again")])
    rows.append({"id": "verify", "prompt": "p", "model": f"replay/{failing}", "verify": "false"})
    out = run_mermaid(
        [
            "batch",
            str(tasks_file(tmp_path / "tasks.jsonl", rows)),
            "--jobs",
            "4",
            "--keep-going",
            "--out",
            str(tmp_path / "out"),
        ],
        repo,
        timeout=300,
    )
    assert out.code == 5, out.stderr
    lines = task_lines(tmp_path / "out" / "results.jsonl")
    assert list(lines) == [row["id"] for row in rows]  # task order, whatever the finishing order
    assert lines["short"]["status"] == "provider_error" and lines["short"]["exit_code"] == 5
    assert lines["verify"]["status"] == "failed" and lines["verify"]["exit_code"] == 1
    for i in range(10):
        line = lines[f"t{i:02d}"]
        assert line["status"] == "success" and line["workspace"] == "worktree"
        # isolation: each patch holds its own task's file and nothing of the others'
        assert line["files_changed"] == [f"t{i:02d}.txt"]
        assert line["patch"].count("diff --git") == 1 and f"b/t{i:02d}.txt" in line["patch"]
        artifacts = tmp_path / "out" / line["artifacts"]
        assert json.loads((artifacts / "events.jsonl").read_text().splitlines()[-1])["type"] == "result"
        assert list((artifacts / "conversations").glob("*.jsonl")), "the task's session was kept"
    summary = results(tmp_path / "out" / "results.jsonl")[-1]
    assert summary["type"] == "batch_summary" and summary["exit_code"] == 5 and summary["tasks"] == 12
    # stdout: one line per task as it ends, then the summary; the project itself is untouched
    streamed = out.events
    assert (
        sorted(e["task_id"] for e in streamed[:-1]) == sorted(lines)
        and streamed[-1]["type"] == "batch_summary"
    )
    assert not list(repo.glob("t*.txt"))
    assert git(repo, "worktree", "list").count("\n") == 1, "every task worktree was removed"
    assert git(repo, "status", "--porcelain") == ""


def test_uncommitted_state_seeds_every_task(repo, tmp_path):
    (repo / "README.md").write_text("edited, not committed\n")
    (repo / "new.txt").write_text("untracked\n")
    script = write_script(tmp_path / "s.jsonl", [call("read_file", {"path": "new.txt"}), say("ok")])
    rows = [{"id": "a", "prompt": "read", "model": f"replay/{script}"}]
    out = run_mermaid(
        ["batch", str(tasks_file(tmp_path / "t.jsonl", rows)), "--out", str(tmp_path / "o")], repo
    )
    assert out.code == 0, out.stderr
    line = task_lines(tmp_path / "o" / "results.jsonl")["a"]
    events = (tmp_path / "o" / line["artifacts"] / "events.jsonl").read_text()
    assert "untracked" in events  # the task read the untracked file
    assert line["patch"] == "" and line["files_changed"] == []  # the seed is the base, not the task's change


def test_outside_git_a_task_works_on_a_copy(project, tmp_path):
    (project / "keep.txt").write_text("original\n")
    rows = [
        {
            "id": "c",
            "prompt": "w",
            "model": writer_script(tmp_path / "s", "c", name="keep.txt", content="changed\n"),
        }
    ]
    out = run_mermaid(
        ["batch", str(tasks_file(tmp_path / "t.jsonl", rows)), "--out", str(tmp_path / "o")], project
    )
    assert out.code == 0, out.stderr
    line = task_lines(tmp_path / "o" / "results.jsonl")["c"]
    assert line["workspace"] == "copy" and "+changed" in line["patch"] and "-original" in line["patch"]
    assert (project / "keep.txt").read_text() == "original\n"


def test_the_batch_budget_stops_new_tasks(repo, tmp_path):
    # each scripted task costs about $0.0008 (sonnet prices); a $0.001 budget pays for one start
    rows = [{"id": f"b{i}", "prompt": "w", "model": writer_script(tmp_path / "s", f"b{i}")} for i in range(4)]
    out = run_mermaid(
        [
            "batch",
            str(tasks_file(tmp_path / "t.jsonl", rows)),
            "--max-cost",
            "0.001",
            "--keep-going",
            "--out",
            str(tmp_path / "o"),
        ],
        repo,
    )
    lines = task_lines(tmp_path / "o" / "results.jsonl")
    started = [t for t, line in lines.items() if line["started"]]
    assert 1 <= len(started) < 4
    skipped = [line for line in lines.values() if not line["started"]]
    assert skipped and all(line["status"] == "limit" and "max-cost" in line["reason"] for line in skipped)
    assert out.code == 4, out.stderr


def test_without_keep_going_the_first_failure_stops_the_rest(repo, tmp_path):
    short = write_script(tmp_path / "short.jsonl", [call("read_file", {"path": "README.md"})])
    rows = [{"id": "first", "prompt": "p", "model": f"replay/{short}"}]
    rows += [
        {"id": f"n{i}", "prompt": "w", "model": writer_script(tmp_path / "s", f"n{i}")} for i in range(2)
    ]
    out = run_mermaid(
        ["batch", str(tasks_file(tmp_path / "t.jsonl", rows)), "--out", str(tmp_path / "o")], repo
    )
    assert out.code == 5
    lines = task_lines(tmp_path / "o" / "results.jsonl")
    assert [lines[f"n{i}"]["status"] for i in range(2)] == ["skipped", "skipped"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "a"}', "prompt"),
        ('{"id": "a b", "prompt": "x"}', "id"),
        ('{"id": "a", "prompt": "x", "frobnicate": 1}', "frobnicate"),
        ('{"id": "a", "prompt": "x", "path": "../up"}', "path"),
        ("not json", "not a JSON object"),
    ],
)
def test_a_bad_task_line_is_exit_2_naming_the_line(repo, tmp_path, line, message):
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "ok", "prompt": "fine"}\n' + line + "\n")
    out = run_mermaid(["batch", str(path), "--out", str(tmp_path / "o")], repo)
    assert out.code == 2 and "t.jsonl:2:" in out.stderr and message in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "o").exists()


def test_duplicate_ids_are_refused(repo, tmp_path):
    path = tasks_file(tmp_path / "t.jsonl", [{"id": "a", "prompt": "x"}, {"id": "a", "prompt": "y"}])
    out = run_mermaid(["batch", "plan", str(path), "--shards", "2"], repo)
    assert out.code == 2 and "already used on line 1" in out.stderr


def test_repository_hooks_never_run(repo, tmp_path):
    marker = tmp_path / "hook-ran"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (repo / "dirty.txt").write_text("x\n")  # forces a seed commit in the worktree
    rows = [{"id": "h", "prompt": "w", "model": writer_script(tmp_path / "s", "h")}]
    out = run_mermaid(["batch", str(tasks_file(tmp_path / "t.jsonl", rows))], repo)
    assert out.code == 0, out.stderr
    assert not marker.exists()
    # the default artifacts directory is .mermaid/batch/STAMP, kept out of git
    (results_file,) = (repo / ".mermaid" / "batch").glob("*/results.jsonl")
    assert task_lines(results_file)["h"]["status"] == "success"
    assert git(repo, "status", "--porcelain") == "?? dirty.txt\n"


def test_the_repositorys_python_files_never_stand_in_for_the_standard_librarys(repo, tmp_path):
    """A task's child runs in the task's copy of the repository: a `typing.py` or `json.py` there
    must not be what Mermaid imports (it would run outside any sandbox)."""
    marker = tmp_path / "imported"
    plant_shadows(repo, ["typing", "json", "asyncio", "mermaid_cli"], marker)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "shadows")
    rows = [{"id": "s", "prompt": "w", "model": writer_script(tmp_path / "s", "s")}]
    # the `mermaid` command, as a user runs it (`python -m` from the repository would take its
    # `mermaid_cli.py` for Mermaid: that is Python's doing, before any of Mermaid's code runs)
    mermaid = Path(sys.executable).with_name("mermaid")
    proc = subprocess.run(
        [str(mermaid), "batch", str(tasks_file(tmp_path / "t.jsonl", rows))],
        cwd=repo,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists(), marker.read_text()
    (results_file,) = (repo / ".mermaid" / "batch").glob("*/results.jsonl")
    assert task_lines(results_file)["s"]["status"] == "success"


def _comparable(line: dict) -> tuple:
    return (line["task_id"], line["status"], line["exit_code"], line["files_changed"], line["patch"])


def test_plan_shard_merge_equals_the_unsharded_batch(repo, tmp_path):
    rows = [{"id": f"s{i}", "prompt": "w", "model": writer_script(tmp_path / "s", f"s{i}")} for i in range(6)]
    tasks = tasks_file(tmp_path / "tasks.jsonl", rows)
    plan = run_mermaid(["batch", "plan", str(tasks), "--shards", "3"], repo)
    assert plan.code == 0, plan.stderr
    matrix = json.loads(plan.stdout)
    assert list(matrix) == ["include"]  # any other key would become a matrix dimension
    assert [row["shard"] for row in matrix["include"]] == ["1/3", "2/3", "3/3"]
    gitlab = run_mermaid(["batch", "plan", str(tasks), "--shards", "3", "--format", "gitlab"], repo)
    assert gitlab.stdout.strip() == "3"
    shard_files = []
    for row in matrix["include"]:
        out_dir = tmp_path / f"shard{row['shard'][0]}"
        out = run_mermaid(
            ["batch", str(tasks), "--shard", row["shard"], "--jobs", "2", "--out", str(out_dir)], repo
        )
        assert out.code == 0, out.stderr
        (shard_file,) = out_dir.glob("results-shard-*.jsonl")
        assert len(task_lines(shard_file)) == row["tasks"]
        shard_files.append(shard_file)
    merged_dir = tmp_path / "merged"
    merge = run_mermaid(["batch", "merge", *map(str, shard_files), "--out", str(merged_dir)], repo)
    assert merge.code == 0, merge.stderr
    whole = run_mermaid(["batch", str(tasks), "--jobs", "3", "--out", str(tmp_path / "whole")], repo)
    assert whole.code == 0, whole.stderr
    merged = [_comparable(line) for line in task_lines(merged_dir / "results.jsonl").values()]
    unsharded = [_comparable(line) for line in task_lines(tmp_path / "whole" / "results.jsonl").values()]
    assert merged == unsharded
    assert sorted(p.name for p in (merged_dir / "patches").iterdir()) == [f"s{i}.patch" for i in range(6)]

    # a missing shard, a shard given twice and a shard of another task list are refused
    missing = run_mermaid(["batch", "merge", *map(str, shard_files[:2]), "--out", str(tmp_path / "m1")], repo)
    assert missing.code == 2 and "no result" in missing.stderr
    twice = run_mermaid(
        ["batch", "merge", str(shard_files[0]), str(shard_files[0]), "--out", str(tmp_path / "m2")], repo
    )
    assert twice.code == 2 and "given twice" in twice.stderr
    other = tasks_file(tmp_path / "other.jsonl", rows[:2])
    run_mermaid(["batch", str(other), "--shard", "1/3", "--out", str(tmp_path / "o3")], repo)
    (foreign,) = (tmp_path / "o3").glob("results-shard-*.jsonl")
    mixed = run_mermaid(
        ["batch", "merge", str(foreign), *map(str, shard_files[1:]), "--out", str(tmp_path / "m3")], repo
    )
    assert mixed.code == 2 and "another task list" in mixed.stderr
    assert not (tmp_path / "m1").exists() and not (tmp_path / "m3").exists()


def test_merge_apply_lands_patches_and_saves_conflicts(repo, tmp_path):
    rows = [
        {
            "id": "one",
            "prompt": "w",
            "model": writer_script(tmp_path / "s", "one", name="README.md", content="one\n"),
        },
        {
            "id": "two",
            "prompt": "w",
            "model": writer_script(tmp_path / "s", "two", name="README.md", content="two\n"),
        },
        {"id": "own", "prompt": "w", "model": writer_script(tmp_path / "s", "own")},
    ]
    out = run_mermaid(
        ["batch", str(tasks_file(tmp_path / "t.jsonl", rows)), "--out", str(tmp_path / "o")], repo
    )
    assert out.code == 0, out.stderr
    merge = run_mermaid(
        ["batch", "merge", str(tmp_path / "o" / "results.jsonl"), "--apply", "--out", str(tmp_path / "m")],
        repo,
    )
    # the second README rewrite conflicts with the first: reported, saved, never forced
    assert merge.code == 1
    assert (repo / "README.md").read_text() == "one\n" and (repo / "own.txt").read_text() == "hi\n"
    assert (tmp_path / "m" / "conflicts" / "two.patch").read_text().count("+two") == 1
    summary = json.loads(merge.stdout.splitlines()[-1])
    assert summary["conflicts"] == ["two"] and summary["status"] == "failed"


def test_plan_output_feeds_a_github_matrix_and_clamps_to_the_task_count(repo, tmp_path):
    tasks = tasks_file(tmp_path / "t.jsonl", [{"id": "a", "prompt": "x"}, {"id": "b", "prompt": "y"}])
    out = run_mermaid(["batch", "plan", str(tasks), "--shards", "5"], repo)
    plan = json.loads(out.stdout)
    assert plan["include"] == [{"shard": "1/2", "tasks": 1}, {"shard": "2/2", "tasks": 1}]
    bad = run_mermaid(["batch", str(tasks), "--shard", "3/2"], repo)
    assert bad.code == 2 and "between 1 and 2" in bad.stderr


async def test_a_task_cancelled_with_the_batch_stops_its_run(tmp_path):
    """When the batch stops without a task (another task failed), that task's process is asked
    to end (SIGTERM: its run ends as an interrupted one) and waited for, never left running."""
    import asyncio

    from conftest import pid_alive

    from mermaid_cli.run.batch.runner import _run_child, _State

    ready = tmp_path / "ready"
    script = f"import signal, sys, time; signal.signal(signal.SIGTERM, lambda *_: sys.exit(143)); open({str(ready)!r}, 'w').close(); time.sleep(60)"
    state = _State()
    run = asyncio.ensure_future(_run_child([sys.executable, "-c", script], tmp_path, tmp_path, state, None))
    for _ in range(200):
        if ready.exists():
            break
        await asyncio.sleep(0.05)
    (proc,) = state.running
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert proc.returncode == 143  # it ended on SIGTERM, by its own handler, before the cancellation went on
    assert not pid_alive(proc.pid) and not state.running
