"""The wire format: the original's golden lines still parse and serialise the same; schema is fresh."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mermaid_cli.core import events as ev

GOLDEN = [
    '{"type":"text","delta":"hello"}',
    '{"type":"reasoning","delta":"thinking"}',
    '{"type":"approval_required","call_id":"tool#4","tool":"execute_command","risk":"network","prompt":"Run curl?"}',
    '{"type":"tasks_updated","tasks":[{"id":1,"subject":"wire the broker","status":"completed","active_form":"wiring the broker","elapsed_secs":130,"tokens_spent":8400,"origin":"model","note":null}],"completed":1,"total":1}',
]

ORIGINAL_LINES = [
    '{"type":"session_started","protocol_version":1,"cli_version":"9.9.9","model":"anthropic/claude-x","task_id":null,"session_id":"20260709_120000_000"}',
    '{"type":"tool_started","call_id":"tool#3"}',
    '{"type":"tool_finished","call_id":"tool#3","name":"execute_command","status":"success","summary":"command completed","error":null}',
    '{"type":"error","message":"connection failed"}',
    '{"type":"turn_done","total_tokens":1234,"stop_reason":"stop"}',
    '{"type":"result","response":"Hi there","reasoning":null,"total_tokens":1234,"errors":[],"session_id":"20260709_120000_000"}',
]


def test_golden_lines_round_trip():
    for line in GOLDEN:
        assert ev.parse_event(line).to_json() == line


def test_original_lines_parse_and_keep_their_fields_in_order():
    for line in ORIGINAL_LINES:
        original = json.loads(line)
        ours = json.loads(ev.parse_event(line).to_json())
        assert list(ours)[: len(original)] == list(original)
        assert {k: ours[k] for k in original} == original


def test_optional_fields_are_omitted_unless_set():
    finished = ev.ToolFinished(call_id="tool#1", name="edit_file", status="success", summary="s")
    assert "fuzzy" not in finished.to_dict() and "web" not in finished.to_dict()
    assert (
        ev.ToolFinished(call_id="t", name="e", status="success", summary="s", fuzzy=True).to_dict()["fuzzy"]
        is True
    )
    assert "structured_output" not in ev.Result(response="", session_id="s").to_dict()
    assert ev.Result(response="", session_id="s", structured_output={"a": 1}).to_dict()[
        "structured_output"
    ] == {"a": 1}


def test_schema_file_is_fresh():
    path = Path(__file__).resolve().parents[1] / "docs" / "events.schema.json"
    assert json.loads(path.read_text()) == ev.json_schema(), (
        "regenerate: python -m mermaid_cli.core.events > docs/events.schema.json"
    )


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_text_gives_one_valid_json_line(text):
    line = ev.encode_line(
        ev.ToolFinished(call_id="tool#1", name="x", status="success", summary=text, output=text)
    )
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    decoded = json.loads(line.decode("utf-8"))
    assert decoded["type"] == "tool_finished"


@settings(max_examples=100, deadline=None)
@given(st.binary())
def test_any_bytes_decoded_as_tools_do_give_valid_lines(data):
    import os

    for text in (data.decode("utf-8", "replace"), os.fsdecode(data)):  # fsdecode keeps lone surrogates
        line = ev.encode_line(ev.Text(delta=text))
        assert json.loads(line.decode("utf-8"))["type"] == "text"


def test_zero_and_false_values_are_values_not_absences():
    # exit_code 0 == False in Python; only the `fuzzy` flag is left out when False
    finished = ev.ToolFinished(
        call_id="tool#1", name="execute_command", status="success", summary="ok", exit_code=0
    )
    assert finished.to_dict()["exit_code"] == 0
    assert "fuzzy" not in finished.to_dict()
    assert "exit_code" not in ev.ToolFinished(call_id="t", name="n", status="success", summary="").to_dict()
    result = ev.Result(response="", total_tokens=0, errors=[], session_id="s", structured_output=False)
    assert result.to_dict()["structured_output"] is False


def test_nothing_follows_the_result_line():
    """A task that ends after the run (the event loop's shutdown cancels it) cannot push a line
    past `result`: the stream's last line stays the one a pipeline reads."""
    import io
    import time
    from types import SimpleNamespace

    from mermaid_cli.run.output import Output

    stdout = io.BytesIO()
    out = Output(
        "jsonl", SimpleNamespace(stdout=stdout, stderr=io.StringIO(), monotonic=time.monotonic), quiet=True
    )
    out.emit(ev.ToolStarted(call_id="tool#1", name="execute_command"))
    out.emit(ev.Result(response="done", session_id="s"))
    out.emit(
        ev.ToolFinished(call_id="tool#1", name="execute_command", status="cancelled", summary="cancelled")
    )
    lines = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert [line["type"] for line in lines] == ["tool_started", "result"]
