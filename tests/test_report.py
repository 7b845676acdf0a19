"""`mermaid report`: real runs' events drawn as Markdown and as HTML in real headless Chromium."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import call, run_mermaid, say, write_script

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def scripted_run(project: Path, tmp_path: Path, file_name: str = "hello.txt") -> Path:
    """A 3-turn run (write, read, answer) as `mermaid exec --json` printed it."""
    script = write_script(
        tmp_path / "script.jsonl",
        [
            call("write_file", {"path": file_name, "content": "hi\n"}, "c1"),
            call("read_file", {"path": file_name}, "c2"),
            say("done"),
        ],
    )
    out = run_mermaid(["exec", "--json", "--model", f"replay/{script}", "write and read"], project)
    assert out.code == 0, out.stderr
    events = tmp_path / "events.jsonl"
    events.write_text(out.stdout)
    return events


def test_markdown_has_a_gantt_bar_per_turn_and_the_tables(project, tmp_path):
    events = scripted_run(project, tmp_path)
    out = run_mermaid(["report", str(events)], project)
    assert out.code == 0, out.stderr
    md = out.stdout
    assert "## Mermaid run: success (exit 0)" in md
    gantt = md.split("```mermaid\n", 1)[1].split("```", 1)[0]
    model_section = gantt.split("section Model\n", 1)[1].split("section", 1)[0]
    assert [line.split(":")[0].strip() for line in model_section.strip().splitlines()] == [
        "turn 1",
        "turn 2",
        "turn 3",
    ]
    assert "section Tools" in gantt and "write_file" in gantt and "read_file" in gantt
    assert "| write_file | 1 | 0 | 0 |" in md and "- `hello.txt`" in md
    assert md.count("| 1 | ") >= 1 and "### Turns" in md


def test_a_session_file_reports_like_the_event_stream(project, tmp_path):
    scripted_run(project, tmp_path)
    (session,) = (project / ".mermaid" / "conversations").glob("*.jsonl")
    out = run_mermaid(["report", str(session)], project)
    assert out.code == 0, out.stderr
    assert "section Model" in out.stdout and "write_file" in out.stdout


def test_hostile_text_cannot_break_out_of_the_report(project, tmp_path):
    name = "x```\n<script>alert(1)</script>|evil: task.txt"
    events = tmp_path / "events.jsonl"
    lines = [
        {
            "type": "session_started",
            "protocol_version": 1,
            "cli_version": "0",
            "model": "m",
            "session_id": "s",
        },
        {"type": "tool_started", "call_id": "c", "name": name, "arguments": {}},
        {"type": "tool_finished", "call_id": "c", "name": name, "status": "error", "duration_ms": 3},
        {"type": "turn_done", "usage": {"input_tokens": 1, "output_tokens": 1}},
        {"type": "result", "response": "", "session_id": "s", "files_changed": [name], "errors": [name]},
    ]
    events.write_text("".join(json.dumps(line) + "\n" for line in lines))
    md = run_mermaid(["report", str(events)], project).stdout
    assert md.count("```") == 2  # only the gantt block's own fences
    assert "<script>" not in md
    gantt = md.split("```mermaid\n", 1)[1].split("```", 1)[0]
    assert all(
        line.count(":") <= 1 for line in gantt.splitlines() if "section" not in line and "title" not in line
    )
    page = run_mermaid(["report", str(events), "--format", "html"], project).stdout
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "default-src 'none'" in page


def test_bad_input_is_a_clear_usage_error(project, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = run_mermaid(["report", str(empty)], project)
    assert out.code == 2 and "no events" in out.stderr and "Traceback" not in out.stderr
    missing = run_mermaid(["report", str(tmp_path / "nope.jsonl")], project)
    assert missing.code == 2 and "cannot read" in missing.stderr


def test_html_is_self_contained_and_chromium_draws_one_bar_per_turn(project, tmp_path):
    if CHROMIUM is None:
        # like the Xvfb tests: a newcomer's machine may lack it; .ci/run installs it, so CI runs this
        pytest.skip("Chromium not found (apt-get install chromium); the HTML report's browser test needs it")
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is a [dev] dependency")
    events = scripted_run(project, tmp_path)
    page_file = tmp_path / "run.html"
    out = run_mermaid(["report", str(events), "--format", "html", "-o", str(page_file)], project)
    assert out.code == 0, out.stderr
    html = page_file.read_text()
    assert "<script" not in html and "src=" not in html and "href=" not in html
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
        )
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 800})
            requests: list[str] = []
            page.on("request", lambda request: requests.append(request.url))
            page.goto(page_file.as_uri())
            bars = page.locator("#timeline rect.bar.turn")
            assert bars.count() == 3
            for index in range(3):
                box = bars.nth(index).bounding_box()
                assert box is not None and box["width"] >= 2 and box["height"] > 0
            assert page.locator("#timeline rect.bar.tool").count() == 2
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert requests == [page_file.as_uri()]  # the page loaded nothing else
    assert (tmp_path / "report.png").stat().st_size > 1000


def test_a_batch_results_file_reports_its_tasks(project, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [say("ok")])
    tasks = tmp_path / "t.jsonl"
    tasks.write_text(json.dumps({"id": "only", "prompt": "p", "model": f"replay/{script}"}) + "\n")
    assert run_mermaid(["batch", str(tasks), "--out", str(tmp_path / "o")], project).code == 0
    out = run_mermaid(["report", str(tmp_path / "o" / "results.jsonl")], project)
    assert out.code == 0, out.stderr
    assert "## Mermaid batch: success (exit 0)" in out.stdout and "| only | success | 0 |" in out.stdout
    assert "section Tasks" in out.stdout


def test_every_event_carries_a_ts_that_never_goes_backwards(project, tmp_path):
    events = [json.loads(line) for line in scripted_run(project, tmp_path).read_text().splitlines()]
    stamps = [event["ts"] for event in events]
    assert all(isinstance(ts, int) and ts >= 0 for ts in stamps)
    assert stamps == sorted(stamps)
    assert all(list(event)[-1] == "ts" for event in events)  # the last field of every line
    # with ts, the timeline is measured, not laid end to end
    md = run_mermaid(["report", str(tmp_path / "events.jsonl")], project).stdout
    assert "approximate" not in md


def test_events_without_ts_still_report_marked_approximate(project, tmp_path):
    events = scripted_run(project, tmp_path)
    stripped = tmp_path / "old.jsonl"
    rows = [json.loads(line) for line in events.read_text().splitlines()]
    stripped.write_text("".join(json.dumps({k: v for k, v in row.items() if k != "ts"}) + "\n" for row in rows))
    md = run_mermaid(["report", str(stripped)], project).stdout
    assert "approximate" in md and md.count("    turn ") == 3
