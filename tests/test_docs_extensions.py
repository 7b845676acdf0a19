"""docs/extensions.md stays true: its worked example is written out and run, and its tables name
exactly the manifest keys and lifecycle events the code has."""

from __future__ import annotations

import os
import re
import shlex
import subprocess

from conftest import ROOT, run_mermaid

from mermaid_cli.config.sections.hooks import LIFECYCLE_EVENTS
from mermaid_cli.extensions.manifest import PluginManifest

PAGE = (ROOT / "docs" / "extensions.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```[^\n`]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def _after(marker: str) -> str:
    match = FENCE.search(PAGE, PAGE.index(f"<!-- {marker} -->"))
    assert match is not None
    return match.group(1)


def test_worked_example_runs_as_documented(tmp_path, isolated_env):
    for name in re.findall(r"<!-- file: (\S+) -->", PAGE):
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_after(f"file: {name}"))
    outputs = []
    for line in _after("commands").splitlines():
        argv = shlex.split(line)
        if argv[0] == "mermaid":
            out = run_mermaid(argv[1:], tmp_path)
            assert out.code == 0, (line, out.stderr)
            outputs.append(out)
        else:
            subprocess.run(argv, cwd=tmp_path, check=True)
    audit, install, enable, run = outputs
    assert "denies writes under dist/" in audit.stdout
    assert "installed" in install.stdout
    assert "run 1 hook executable(s) on every tool call and lifecycle event" in enable.stdout
    events = run.events
    assert events[0]["plugins"] == ["tidy"] and events[0]["skills"] == 1
    finished = next(e for e in events if e["type"] == "tool_finished")
    assert finished["decision"]["verdict"] == "deny" and finished["decision"]["by"] == "hook"
    assert "dist/ is generated; edit the sources" in finished["output"]
    assert not (tmp_path / "dist" / "app.js").exists()
    session = next((tmp_path / ".mermaid" / "conversations").glob("*.jsonl")).read_text()
    assert "Tidy up src: remove dead code, keep behaviour. Follow the tidy-up skill." in session
    # the index line is what the fake-provider run in test_extensions_run.py sees in the request
    from mermaid_cli.config.loader import load_settings
    from mermaid_cli.extensions.session import load_for_run

    ext = load_for_run(load_settings(project_root=tmp_path).settings, tmp_path, {**os.environ}, note=print)
    assert "- tidy-up: How this team tidies code (plugin:tidy, " in ext.system_prompt("base")


def test_manifest_table_matches_the_model():
    start = PAGE.index("| key | meaning |")
    table = PAGE[start : PAGE.index("\n\n", start)]
    assert re.findall(r"^\| `([a-z_]+)` \|", table, re.MULTILINE) == list(PluginManifest.model_fields)


def test_event_table_matches_the_code():
    start = PAGE.index("| event | when | fields |")
    table = PAGE[start : PAGE.index("\n\n", start)]
    assert tuple(re.findall(r"^\| `([a-z_]+)` \|", table, re.MULTILINE)) == LIFECYCLE_EVENTS
