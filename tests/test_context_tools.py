"""context_archive, compact_context and the long-run tool catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mermaid_cli.core.types import ToolCallBlock, ToolResult
from mermaid_cli.tools.ask_user import AskUserQuestion
from mermaid_cli.tools.base import ToolContext, ToolRegistry
from mermaid_cli.tools.catalog_longrun import longrun_tools
from mermaid_cli.tools.context import PAGE_CHARS, ArchivedMessage, CompactContext, ContextArchive

REGISTRY = ToolRegistry([ContextArchive(), CompactContext()])


def make_archive() -> list[ArchivedMessage]:
    return [
        ArchivedMessage(0, "user", "Fix the flaky test in tests/test_net.py", compacted_by=1),
        ArchivedMessage(1, "assistant", "Reading the test first.", compacted_by=1),
        ArchivedMessage(2, "tool", "def test_net():\n    assert fetch(PORT_NUMBER=8431)\n", compacted_by=1),
        ArchivedMessage(3, "user", "[Checkpoint] summary of #0-#2", compacted_by=2),
        ArchivedMessage(
            4, "assistant", "The port 8431 was hard-coded; using a free port now.", compacted_by=None
        ),
        ArchivedMessage(5, "tool", "x" * 70_000 + "THE END", compacted_by=None),
    ]


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    archive = make_archive()
    return ToolContext(project_root=tmp_path, archive=lambda: archive)


async def call(ctx: ToolContext, name: str, **arguments: Any) -> ToolResult:
    bound = REGISTRY.bind(ToolCallBlock(id="x", name=name, arguments=arguments))
    if isinstance(bound, ToolResult):
        return bound
    tool, args = bound
    return await tool.run(args, ctx)


async def test_search_is_case_insensitive_and_marks_compaction(ctx):
    result = await call(ctx, "context_archive", query="port_number")
    assert not result.is_error
    assert "1 message(s)" in result.content
    assert "#2 tool, removed by compaction 1:" in result.content
    assert "PORT_NUMBER=8431" in result.content

    result = await call(ctx, "context_archive", query="8431")
    assert "#2 tool, removed by compaction 1" in result.content
    assert "#4 assistant:" in result.content


async def test_search_falls_back_to_all_words(ctx):
    result = await call(ctx, "context_archive", query="flaky net.py")
    assert "#0 user" in result.content and "(all words)" in result.content
    none = await call(ctx, "context_archive", query="nowhere to be found")
    assert not none.is_error and "No message contains" in none.content


async def test_read_a_message_whole_and_paged(ctx):
    result = await call(ctx, "context_archive", message=2)
    assert result.content == (
        "#2 tool, removed by compaction 1 (51 characters):\ndef test_net():\n    assert fetch(PORT_NUMBER=8431)\n"
    )
    first = await call(ctx, "context_archive", message=5)
    assert (
        f"[characters 0-{PAGE_CHARS} of 70007; read on with message=5, char_offset={PAGE_CHARS}]"
        in first.content
    )
    assert "THE END" not in first.content
    second = await call(ctx, "context_archive", message=5, char_offset=PAGE_CHARS)
    third = await call(ctx, "context_archive", message=5, char_offset=2 * PAGE_CHARS)
    assert "THE END" in third.content and "read on" not in third.content
    body = lambda r: r.content.split("]\n", 1)[1]  # noqa: E731
    assert body(first) + body(second) + body(third) == "x" * 70_000 + "THE END"
    past = await call(ctx, "context_archive", message=5, char_offset=10**6)
    assert "past the end" in past.content


async def test_read_unknown_message(ctx):
    result = await call(ctx, "context_archive", message=99)
    assert result.is_error and "#0-#5" in result.content
    assert (await call(ctx, "context_archive", message=-1)).is_error


async def test_list_everything(ctx):
    result = await call(ctx, "context_archive")
    lines = result.content.splitlines()
    assert lines[0] == "6 message(s):"
    assert lines[1].startswith("#0 user, removed by compaction 1 (39 chars): Fix the flaky test")
    assert lines[5].startswith("#4 assistant (52 chars): The port")
    assert len(lines[6]) < 200  # previews, not whole messages


async def test_long_list_is_paged(tmp_path):
    archive = [ArchivedMessage(i, "assistant", f"message number {i} " * 20) for i in range(2000)]
    ctx = ToolContext(project_root=tmp_path, archive=lambda: archive)
    first = await call(ctx, "context_archive")
    assert len(first.content) <= PAGE_CHARS + 200 and "char_offset=" in first.content
    offset = int(first.content.split("char_offset=")[1].split("]")[0])
    second = await call(ctx, "context_archive", char_offset=offset)
    assert "#1999" not in first.content
    assert second.content.startswith(f"[characters {offset}-")


async def test_query_and_message_together_is_an_error(ctx):
    result = await call(ctx, "context_archive", query="a", message=1)
    assert result.is_error


async def test_no_archive_in_this_run(tmp_path):
    result = await call(ToolContext(project_root=tmp_path), "context_archive", query="x")
    assert result.is_error and "not available" in result.content


async def test_archive_is_read_fresh_each_call(tmp_path):
    log: list[ArchivedMessage] = []
    ctx = ToolContext(project_root=tmp_path, archive=lambda: list(log))
    assert "empty" in (await call(ctx, "context_archive")).content
    log.append(ArchivedMessage(0, "user", "hello"))
    assert "#0 user" in (await call(ctx, "context_archive", query="HELLO")).content


async def test_compact_context_records_the_request(ctx):
    # the request travels in the result, typed, for the loop to honour before its next call
    result = await call(ctx, "compact_context", focus="  the port fix  ")
    assert not result.is_error and result.compaction_focus == "the port fix"
    assert (await call(ctx, "compact_context")).compaction_focus == ""
    assert (await call(ctx, "context_archive")).compaction_focus is None


def test_catalog():
    headless = {t.name for t in longrun_tools(interactive=False, memory_enabled=True)}
    assert headless == {
        "task_create",
        "task_update",
        "task_list",
        "context_archive",
        "compact_context",
        "context_check",
        "scratchpad_read",
        "scratchpad_save_file",
        "memory",
    }
    at_tty = {t.name for t in longrun_tools(interactive=True, memory_enabled=False)}
    assert "ask_user_question" in at_tty and "memory" not in at_tty
    for tool in longrun_tools(interactive=True, memory_enabled=True):
        assert tool.category == {"memory": "memory", "scratchpad_save_file": "edit"}.get(tool.name, "session")
        assert getattr(tool, "interactive_only", False) == (tool.name == "ask_user_question")
        tool.spec()  # the schema builds
    assert AskUserQuestion.interactive_only is True


async def test_two_compactions_and_the_answer_is_still_in_the_archive(tmp_path):
    """The pieces together, as the loop and session store will use them: a run crosses the threshold
    twice; a fact seen early is gone from the live history but context_archive finds it."""
    from mermaid_cli.agent.compaction import apply_compaction, build_summary_request, should_compact
    from mermaid_cli.core.types import Message, TextBlock, ToolResultBlock

    log: list[ArchivedMessage] = []
    live: list[Message] = []
    live_ids: list[int] = []  # archive number of each live message

    def append(message: Message) -> None:
        text = "\n".join(
            b.text if isinstance(b, TextBlock) else b.content if isinstance(b, ToolResultBlock) else ""
            for b in message.content
        )
        log.append(ArchivedMessage(len(log), message.role, text))
        live.append(message)
        live_ids.append(len(log) - 1)

    ctx = ToolContext(project_root=tmp_path, archive=lambda: list(log))
    window_tokens, compactions = 20_000, 0
    append(Message.user_text("Find the build id and fix the release script."))
    for turn in range(40):
        call_block = ToolCallBlock(id=f"c{turn}", name="execute_command", arguments={"command": "make"})
        append(Message(role="assistant", content=(TextBlock(text=f"turn {turn}"), call_block)))
        output = ("build id is 7F3A-99\n" if turn == 1 else "") + "log line\n" * 450  # ~4 KB
        append(Message(role="user", content=(ToolResultBlock(call_id=f"c{turn}", content=output),)))
        tokens = sum(len(m.model_dump_json()) for m in live) // 4
        if should_compact(tokens, window_tokens, 85):
            request = build_summary_request(live, None)
            # long tool outputs are clipped: the summary request is smaller than the context it replaces
            assert len(request.messages[0].text) < tokens * 4 * 0.7
            compactions += 1
            new, removed = apply_compaction(live, "## Goal\nfix the release script\n## Open items\nnone", 2)
            for i in removed:
                archived = log[live_ids[i]]
                log[live_ids[i]] = ArchivedMessage(archived.index, archived.role, archived.text, compactions)
            kept_ids = live_ids[len(removed) :]
            live[:] = new[1:]
            live_ids[:] = kept_ids
            # the checkpoint is a message of the run too
            live.insert(0, new[0])
            log.append(ArchivedMessage(len(log), "user", new[0].text))
            live_ids.insert(0, len(log) - 1)
    assert compactions >= 2
    assert not any("7F3A-99" in m.model_dump_json() for m in live)

    found = await call(ctx, "context_archive", query="BUILD ID IS")
    assert "7F3A-99" in found.content and "removed by compaction 1" in found.content
    number = int(found.content.split("\n#", 1)[1].split(" ", 1)[0])
    whole = await call(ctx, "context_archive", message=number)
    assert whole.content.splitlines()[1] == "build id is 7F3A-99"


def test_docs_describe_context_archive_message_as_the_tool_accepts_it():
    # docs/tools.md once said `message` takes "#number", which the tool refuses
    from pathlib import Path

    from pydantic import ValidationError

    from mermaid_cli.tools.context import ContextArchive

    row = next(
        line for line in (Path(__file__).parents[1] / "docs/tools.md").read_text().splitlines()
        if line.startswith("| `context_archive`")
    )
    assert "`3`" in row
    ContextArchive.Args.model_validate({"message": 3})
    with pytest.raises(ValidationError):
        ContextArchive.Args.model_validate({"message": "#3"})
