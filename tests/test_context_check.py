"""`context_check` through real scripted runs: the live window's figures, compactions counted."""

from __future__ import annotations

from conftest import call, run_inprocess, say, write_script


def _outputs(out, name):
    return [e["output"] for e in out.events if e["type"] == "tool_finished" and e["name"] == name]


def test_context_check_reports_usage_headroom_overhead_and_compactions(project):
    script = write_script(
        project / "s.jsonl",
        [
            call("context_check", {}, "c1", input_tokens=40_000, output_tokens=20),
            call(
                "write_file", {"path": "a.txt", "content": "x"}, "c2", input_tokens=90_000, output_tokens=10
            ),
            say("## Goal\nfinish\n## Decisions\nnone\n## Files touched\na.txt\n## Open items\nnone"),
            call("context_check", {}, "c3", input_tokens=20_000, output_tokens=10),
            say("done"),
        ],
    )
    args = ["--json", "-c", "compaction.context_window=100000", "-c", "compaction.auto_threshold_percent=80"]
    out = run_inprocess(
        [*args, "-c", "compaction.tail_turns=1", "--model", f"replay/{script}", "go"], project
    )
    assert out.code == 0, out.stderr
    first, second = _outputs(out, "context_check")
    assert first.startswith("Using 40020 of 100000 tokens (40%).")
    assert "Headroom: 39980 tokens before auto-compaction fires at 80%." in first
    assert "Fixed overhead: about " in first and "tokens of system prompt and tool schemas" in first
    fixed = int(first.split("Fixed overhead: about ")[1].split()[0])
    assert 1000 < fixed < 20_000
    assert f"Conversation: about {40020 - fixed} tokens" in first
    assert "Compactions so far: none" in first
    assert second.startswith("Using 20010 of 100000 tokens (20%).")
    assert "Compactions so far: 1;" in second
