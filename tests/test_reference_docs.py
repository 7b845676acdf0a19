"""Generated references stay fresh; small CLI wiring checks that have no better home."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import call, run_mermaid, say, write_script

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_configuration_reference_is_fresh():
    from mermaid_cli.config.docs import render

    assert (DOCS / "configuration.md").read_text() == render(), (
        "regenerate: python -m mermaid_cli.config.docs > docs/configuration.md"
    )


def test_every_settings_key_is_documented():
    from mermaid_cli.config.effective import effective_items
    from mermaid_cli.config.loader import load_settings

    text = (DOCS / "configuration.md").read_text()
    loaded = load_settings(project_root=Path("/nonexistent"))
    for key, _value, _source in effective_items(loaded):
        if key.count(".") > 1 or key in ("mcp_servers", "providers", "pricing"):
            continue
        assert f"`{key}`" in text, key


def test_checkpoints_and_restore_through_the_cli(project):
    (project / "a.txt").write_text("before\n")
    write_script(
        project / "s.jsonl", [call("write_file", {"path": "a.txt", "content": "after\n"}), say("done")]
    )
    out = run_mermaid(["exec", "--json", "--model", "replay/s.jsonl", "change a"], project)
    assert out.code == 0 and (project / "a.txt").read_text() == "after\n"
    listing = run_mermaid(["checkpoints", "--json"], project)
    rows = json.loads(listing.stdout)
    assert listing.code == 0 and rows and rows[0]["session"] == out.events[0]["session_id"]
    restored = run_mermaid(["restore", rows[0]["id"]], project)
    assert restored.code == 0, restored.stderr
    assert (project / "a.txt").read_text() == "before\n"


def test_max_cost_with_an_unknown_price_is_exit_2(project):
    write_script(project / "s.jsonl", [say("ok")], model="someone/unknown-model")
    out = run_mermaid(["exec", "--json", "--max-cost", "1", "--model", "replay/s.jsonl", "hi"], project)
    assert out.code == 2 and "--max-cost" in out.events[-1]["errors"][-1]


def test_max_cost_limit_is_exit_4(project):
    turns = [
        call("read_file", {"path": "x"}, f"c{i}", input_tokens=200_000, output_tokens=1000) for i in range(5)
    ]
    write_script(project / "s.jsonl", turns)
    out = run_mermaid(["exec", "--json", "--max-cost", "0.5", "--model", "replay/s.jsonl", "hi"], project)
    assert out.code == 4 and "max cost" in out.events[-1]["errors"][-1]
