"""Long runs through the real loop: compaction with a full archive, resume, the task checklist."""

from __future__ import annotations

import json

from conftest import call, run_inprocess, say, write_script

from mermaid_cli.store.sessions import load_session


def _session_lines(project, sid):
    return [
        json.loads(x) for x in (project / ".mermaid/conversations" / f"{sid}.jsonl").read_text().splitlines()
    ]


def test_two_compactions_and_the_answer_comes_from_the_archive(project):
    script = write_script(
        project / "s.jsonl",
        [
            call(
                "write_file",
                {"path": "notes.txt", "content": "the launch code is 4417"},
                "c1",
                input_tokens=9000,
                output_tokens=10,
            ),
            say(
                "## Goal\nremember the code\n## Decisions\nnone\n## Files touched\nnotes.txt\n## Open items\nnone"
            ),
            call("read_file", {"path": "notes.txt"}, "c2", input_tokens=9500, output_tokens=10),
            say("## Goal\nanswer\n## Decisions\nnone\n## Files touched\nnone\n## Open items\nfind the code"),
            call("context_archive", {"query": "launch code"}, "c3", input_tokens=2000, output_tokens=10),
            say("The launch code is 4417."),
        ],
    )
    args = [
        "--json",
        "-c",
        "compaction.context_window=10000",
        "-c",
        "compaction.tail_turns=1",
        "--model",
        f"replay/{script}",
        "what is the launch code?",
    ]
    out = run_inprocess(args, project)
    assert out.code == 0, out.stderr
    assert out.events[-1]["response"] == "The launch code is 4417."
    stops = [e["stop_reason"] for e in out.events if e["type"] == "turn_done"]
    assert stops.count("compaction") == 2
    archive_result = [
        e for e in out.events if e["type"] == "tool_finished" and e["name"] == "context_archive"
    ][0]
    assert "4417" in archive_result["output"] and "removed by compaction" in archive_result["output"]

    sid = out.events[0]["session_id"]
    lines = _session_lines(project, sid)
    compactions = [x for x in lines if x["kind"] == "compaction"]
    assert [c["number"] for c in compactions] == [1, 2]
    removed = {i for c in compactions for i in c["removed"]}
    messages = [x for x in lines if x["kind"] == "message"]
    assert all(m["index"] in {x["index"] for x in messages} for m in messages)  # nothing deleted
    assert 0 in removed  # the original prompt left the context but not the log

    # --resume picks up the compacted working context, not the whole log
    data = load_session(project, sid)
    assert data.messages[0].text.startswith("[Checkpoint")
    assert len(data.messages) < len(data.all_messages)
    again = write_script(project / "again.jsonl", [say("Still 4417.")])
    resumed = run_inprocess(["--json", "--resume", sid, "--model", f"replay/{again}", "and now?"], project)
    assert resumed.code == 0 and resumed.events[-1]["response"] == "Still 4417."
    data = load_session(project, sid)
    assert data.messages[0].text.startswith("[Checkpoint") and data.messages[-1].text == "Still 4417."


def test_model_requested_compaction_runs_before_the_next_call(project):
    script = write_script(
        project / "s.jsonl",
        [
            call("write_file", {"path": "a.txt", "content": "x"}, "c1"),
            call("compact_context", {"focus": "the file a.txt"}, "c2"),
            say("summary: wrote a.txt"),
            say("done"),
        ],
    )
    out = run_inprocess(
        ["--json", "-c", "compaction.tail_turns=1", "--model", f"replay/{script}", "go"], project
    )
    assert out.code == 0
    assert [e["stop_reason"] for e in out.events if e["type"] == "turn_done"] == [
        "tool_use",
        "tool_use",
        "compaction",
        "stop",
    ]


def test_tasks_are_streamed_and_restored_by_resume(project):
    script = write_script(
        project / "s.jsonl",
        [
            call("task_create", {"tasks": [{"subject": "write code"}, {"subject": "test it"}]}, "c1"),
            call("task_update", {"updates": [{"id": 1, "status": "completed"}]}, "c2"),
            say("halfway"),
        ],
    )
    out = run_inprocess(["--json", "--model", f"replay/{script}", "plan"], project)
    updates = [e for e in out.events if e["type"] == "tasks_updated"]
    assert [u["completed"] for u in updates] == [0, 1] and updates[-1]["total"] == 2
    sid = out.events[0]["session_id"]
    again = write_script(project / "again.jsonl", [call("task_list", {}, "c3"), say("ok")])
    resumed = run_inprocess(["--json", "--resume", sid, "--model", f"replay/{again}", "status?"], project)
    listing = [e for e in resumed.events if e["type"] == "tool_finished"][0]["output"]
    assert "write code" in listing and "test it" in listing


def test_context_too_long_compacts_and_retries(project):
    # The replay provider cannot raise a provider error mid-script, so this goes through the loop
    # with a provider that rejects the first request as too long, as real APIs do.
    import asyncio

    from mermaid_cli.agent.loop import Agent
    from mermaid_cli.agent.state import CompactionPolicy
    from mermaid_cli.core.errors import ContextTooLong
    from mermaid_cli.core.types import Message, ModelTurn, TextBlock, ToolCallBlock, ToolResultBlock
    from mermaid_cli.tools.base import ToolContext, ToolRegistry

    class TooLongOnce:
        model_id = "test/too-long"

        def __init__(self):
            self.calls = 0

        async def turn(self, request, sink):
            self.calls += 1
            if self.calls == 1:
                raise ContextTooLong("prompt is too long: 250000 tokens > 200000 maximum")
            if request.system.startswith("You write checkpoint"):
                return ModelTurn(content=(TextBlock(text="## Goal\nsummary"),), stop_reason="stop")
            return ModelTurn(content=(TextBlock(text="answered"),), stop_reason="stop")

        async def aclose(self):
            pass

    history = [
        Message.user_text("old task"),
        Message(
            role="assistant", content=(ToolCallBlock(id="a", name="read_file", arguments={"path": "x"}),)
        ),
        Message(role="user", content=(ToolResultBlock(call_id="a", content="y" * 1000),)),
        Message(role="assistant", content=(TextBlock(text="done before"),)),
    ]
    events = []
    provider = TooLongOnce()
    agent = Agent(
        provider=provider,
        registry=ToolRegistry(),
        ctx=ToolContext(project_root=project),
        emit=events.append,
        system_prompt="sys",
        history=history,
        compaction=CompactionPolicy(tail_turns=1),
    )
    stats = asyncio.run(agent.run("new question"))
    assert stats.response == "answered" and provider.calls == 3
    assert agent.messages[0].text.startswith("[Checkpoint")


def test_task_list_warnings_in_a_run(project):
    script = write_script(
        project / "s.jsonl",
        [
            call("task_create", {"tasks": [{"subject": "A"}, {"subject": "B"}, {"subject": "C"}]}, "c1"),
            call(
                "task_update",
                {"updates": [{"id": 1, "status": "in_progress"}, {"id": 2, "status": "in_progress"}]},
                "c2",
            ),
            call(
                "task_update",
                {"updates": [{"id": 1, "status": "completed"}, {"id": 2, "status": "blocked"}]},
                "c3",
            ),
            call(
                "task_update",
                {"updates": [{"id": 2, "note": "needs a key"}, {"id": 3, "status": "in_progress"}]},
                "c4",
            ),
            say("ok"),
        ],
    )
    out = run_inprocess(["--json", "--model", f"replay/{script}", "plan"], project)
    assert out.code == 0, out.stderr
    created, two, blocked, clean = [
        e["output"] for e in out.events if e["type"] == "tool_finished" and e["name"].startswith("task_")
    ]
    assert "nothing is in progress while 3 task(s) remain pending" in created
    assert "2 tasks are in progress (#1, #2)" in two
    assert "task #2 is blocked without a note" in blocked
    assert "nothing is in progress while 1 task(s) remain pending" in blocked
    assert "Note:" not in clean
