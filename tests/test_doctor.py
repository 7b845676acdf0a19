"""`mermaid doctor`: exit 1 when a run would fail, key sources never values."""

from __future__ import annotations

import json

from conftest import FIXTURES, run_mermaid


def test_doctor_fails_without_a_model_and_names_the_fix(project):
    out = run_mermaid(["doctor", "--json"], project)
    report = json.loads(out.stdout)
    assert out.code == 1 and report["ok"] is False
    model = next(c for c in report["checks"] if c["name"] == "model")
    assert model["status"] == "fail" and "ANTHROPIC_API_KEY" in model["detail"]


def test_doctor_reports_key_source_not_value(project):
    key = "sk-ant-doctor-secret-123456"
    out = run_mermaid(["doctor", "--json"], project, env={"ANTHROPIC_API_KEY": key})
    report = json.loads(out.stdout)
    assert out.code == 0 and report["ok"] is True
    model = next(c for c in report["checks"] if c["name"] == "model")
    assert "env ANTHROPIC_API_KEY" in model["detail"]
    assert key not in out.stdout + out.stderr
    tools = next(c for c in report["checks"] if c["name"] == "tools")["detail"]
    assert "execute_command" in tools and "read_file" in tools


def test_doctor_reports_config_errors(project):
    (project / ".mermaid").mkdir()
    (project / ".mermaid/config.toml").write_text("[safety]\nmode = 'yolo'\n")
    out = run_mermaid(["doctor", "-m", f"replay/{FIXTURES}/demo/hello.jsonl"], project)
    assert out.code == 1 and "FAIL  config" in out.stdout and "safety.mode" in out.stdout
