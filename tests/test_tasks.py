"""The task checklist tools and the TaskStore they share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mermaid_cli.core.events import TasksUpdated
from mermaid_cli.core.types import ToolCallBlock, ToolResult
from mermaid_cli.tools.base import ToolContext, ToolRegistry
from mermaid_cli.tools.tasks import TaskCreate, TaskList, TaskStore, TaskUpdate


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry([TaskCreate(), TaskUpdate(), TaskList()])


@pytest.fixture
def events() -> list[Any]:
    return []


@pytest.fixture
def ctx(tmp_path: Path, events: list[Any]) -> ToolContext:
    return ToolContext(project_root=tmp_path, emit=events.append)


async def call(registry: ToolRegistry, ctx: ToolContext, name: str, **arguments: Any) -> ToolResult:
    bound = registry.bind(ToolCallBlock(id="t1", name=name, arguments=arguments))
    if isinstance(bound, ToolResult):
        return bound
    tool, args = bound
    return await tool.run(args, ctx)


async def test_create_numbers_tasks_and_emits_full_list(registry, ctx, events):
    result = await call(
        registry,
        ctx,
        "task_create",
        tasks=[{"subject": "Run the tests", "active_form": "Running the tests"}, {"subject": "Fix the bug"}],
    )
    assert not result.is_error
    assert "1. [pending] Run the tests (Running the tests)" in result.content
    assert "2. [pending] Fix the bug" in result.content
    assert events[-1]["type"] == "tasks_updated"
    assert events[-1]["total"] == 2 and events[-1]["completed"] == 0
    assert [t["id"] for t in events[-1]["tasks"]] == [1, 2]
    # active_form defaults to the subject
    assert events[-1]["tasks"][1]["active_form"] == "Fix the bug"
    # the dict converts to the protocol event as is
    TasksUpdated.model_validate(events[-1])

    await call(registry, ctx, "task_create", tasks=[{"subject": "Ship"}])
    assert [t["id"] for t in events[-1]["tasks"]] == [1, 2, 3]


async def test_update_status_subject_note(registry, ctx, events):
    await call(registry, ctx, "task_create", tasks=[{"subject": "A"}, {"subject": "B"}])
    result = await call(
        registry,
        ctx,
        "task_update",
        updates=[
            {"id": 1, "status": "completed"},
            {"id": 2, "status": "in_progress", "subject": "B2", "note": "x"},
        ],
    )
    assert not result.is_error
    assert "Tasks (1/2 completed)" in result.content
    assert "2. [in_progress] B2 - note: x" in result.content
    ev = events[-1]
    assert ev["completed"] == 1
    assert [t["status"] for t in ev["tasks"]] == ["completed", "in_progress"]
    assert ev["tasks"][1]["note"] == "x"
    # an empty note clears it
    await call(registry, ctx, "task_update", updates=[{"id": 2, "note": ""}])
    assert events[-1]["tasks"][1]["note"] is None


async def test_unknown_id_changes_nothing(registry, ctx, events):
    await call(registry, ctx, "task_create", tasks=[{"subject": "A"}])
    n = len(events)
    result = await call(
        registry,
        ctx,
        "task_update",
        updates=[{"id": 1, "status": "completed"}, {"id": 9, "status": "completed"}],
    )
    assert result.is_error
    assert "#9" in result.content and "nothing was changed" in result.content
    assert len(events) == n
    listed = await call(registry, ctx, "task_list")
    assert "1. [pending] A" in listed.content


async def test_bad_status_is_an_argument_error(registry, ctx):
    await call(registry, ctx, "task_create", tasks=[{"subject": "A"}])
    result = await call(registry, ctx, "task_update", updates=[{"id": 1, "status": "done"}])
    assert result.is_error and "invalid arguments" in result.content


async def test_soft_notes_are_not_rejections(registry, ctx, events):
    await call(registry, ctx, "task_create", tasks=[{"subject": "A"}, {"subject": "B"}, {"subject": "C"}])
    result = await call(
        registry,
        ctx,
        "task_update",
        updates=[
            {"id": 1, "status": "in_progress"},
            {"id": 2, "status": "in_progress"},
            {"id": 3, "status": "blocked"},
        ],
    )
    assert not result.is_error
    assert "2 tasks are in progress (#1, #2)" in result.content
    assert "task #3 is blocked without a note" in result.content
    assert [t["status"] for t in events[-1]["tasks"]] == ["in_progress", "in_progress", "blocked"]
    result = await call(
        registry,
        ctx,
        "task_update",
        updates=[{"id": 2, "status": "pending"}, {"id": 3, "note": "needs a key"}],
    )
    assert "Note:" not in result.content


async def test_list_empty(registry, ctx):
    result = await call(registry, ctx, "task_list")
    assert not result.is_error and "No tasks" in result.content


def test_elapsed_and_tokens_tracked():
    clock = Clock()
    store = TaskStore(clock=clock)
    (task,) = store.create([("Build", None)])
    assert store.event()["tasks"][0]["elapsed_secs"] is None
    store.set_status(task, "in_progress", tokens=100)
    clock.now += 42
    assert store.event()["tasks"][0]["elapsed_secs"] == 42
    store.set_status(task, "completed", tokens=350)
    clock.now += 100
    line = store.event()["tasks"][0]
    assert line["elapsed_secs"] == 42
    assert line["tokens_spent"] == 250


async def test_tokens_from_loop_state(registry, ctx, events):
    await call(registry, ctx, "task_create", tasks=[{"subject": "A"}])
    ctx.tokens_total = 1000
    await call(registry, ctx, "task_update", updates=[{"id": 1, "status": "in_progress"}])
    ctx.tokens_total = 1600
    await call(registry, ctx, "task_update", updates=[{"id": 1, "status": "completed"}])
    assert events[-1]["tasks"][0]["tokens_spent"] == 600


async def test_store_round_trips_for_resume(registry, ctx, tmp_path):
    await call(
        registry, ctx, "task_create", tasks=[{"subject": "A", "active_form": "Doing A"}, {"subject": "B"}]
    )
    await call(registry, ctx, "task_update", updates=[{"id": 2, "status": "blocked", "note": "waiting"}])
    saved = ctx.tasks.to_json()
    (tmp_path / "tasks.json").write_text(saved)

    restored = TaskStore.from_json((tmp_path / "tasks.json").read_text())
    assert restored.render() == ctx.tasks.render()
    fresh = ToolContext(project_root=tmp_path, tasks=restored)
    result = await call(registry, fresh, "task_create", tasks=[{"subject": "C"}])
    assert "3. [pending] C" in result.content  # ids continue after a resume
    assert TaskStore.from_dict(restored.to_dict()).to_json() == restored.to_json()
