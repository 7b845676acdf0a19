"""Timings of the pure long-run pieces at 300 turns with 4 KB tool outputs (prints numbers).

Targets: a piece that runs every turn <= 1 ms (the whole harness has 5 ms a turn at turn 300,
bench_longrun); a piece that runs once a compaction, once a tool call or once a run (summary
request, applying it, context_archive, the memory index) <= 50 ms.

python bench/bench_longrun_pieces.py
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from mermaid_cli.agent.compaction import apply_compaction, build_summary_request, should_compact
from mermaid_cli.core.types import Message, TextBlock, ToolCallBlock, ToolResultBlock
from mermaid_cli.run.prompt import build_system_prompt
from mermaid_cli.tools.base import ToolContext
from mermaid_cli.tools.context import ArchivedMessage, ContextArchive, ContextArchiveArgs
from mermaid_cli.tools.memory import MemoryStore, memory_index

TURNS = 300
OUTPUT = "x" * 4000 + "\n"


def history() -> list[Message]:
    msgs = [Message.user_text("task")]
    for i in range(TURNS):
        call = ToolCallBlock(id=f"c{i}", name="read_file", arguments={"path": f"f{i}.py"})
        msgs.append(Message(role="assistant", content=(TextBlock(text=f"turn {i}"), call)))
        msgs.append(Message(role="user", content=(ToolResultBlock(call_id=f"c{i}", content=OUTPUT),)))
    return msgs


def timed(label: str, fn, repeat: int = 20, target_ms: float = 1.0) -> None:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    ms = (time.perf_counter() - start) * 1000 / repeat
    print(f"{label:<48} {ms:8.3f} ms  (target <= {target_ms:g} ms)")


def main() -> None:
    msgs = history()
    timed("should_compact", lambda: should_compact(170_000, 200_000, 85), 10_000)
    timed(f"build_summary_request ({len(msgs)} msgs)", lambda: build_summary_request(msgs, "focus"), target_ms=50)
    timed(f"apply_compaction ({len(msgs)} msgs, tail 2)", lambda: apply_compaction(msgs, "summary", 2), target_ms=50)

    archive = [ArchivedMessage(i, "tool", OUTPUT + f"marker {i}") for i in range(2 * TURNS)]
    ctx = ToolContext(project_root=Path("."), archive=lambda: archive)
    tool = ContextArchive()
    search = ContextArchiveArgs(query="MARKER 299")
    timed("context_archive search (600 x 4 KB)", lambda: asyncio.run(tool.run(search, ctx)), target_ms=50)
    timed("context_archive list (600 x 4 KB)", lambda: asyncio.run(tool.run(ContextArchiveArgs(), ctx)), target_ms=50)

    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp), None)
        for i in range(300):
            store.write("project", f"fact-{i}", f"description {i}", "content")
        timed("memory_index (300 facts)", lambda: memory_index(Path(tmp), None), target_ms=50)
        index = memory_index(Path(tmp), None)
    timed(
        "build_system_prompt",
        lambda: build_system_prompt(
            tools=["read_file"] * 20,
            safety_mode="auto",
            project_root="/p",
            instructions="x" * 40_000,
            memory_index=index,
            interactive=False,
            os_name="Linux",
        ),
        1000,
    )


if __name__ == "__main__":
    main()
