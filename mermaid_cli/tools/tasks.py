"""The task checklist: task_create, task_update, task_list and the `TaskStore` they share.

The store lives in `ctx.tasks`; the session saves it with `to_json()` and `--resume`
restores it with `TaskStore.from_json()`. Every change emits a `tasks_updated` event as a plain dict
(the loop converts it to `events.TasksUpdated`). Questionable shapes (two tasks in progress, a
blocked task with no note, nothing in progress while tasks are pending) get soft notes in the
result, never rejections: the checklist is the model's own plan, and refusing an update would only
make it stop keeping one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mermaid_cli.core.types import ToolResult
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext

Status = Literal["pending", "in_progress", "completed", "blocked"]


class Task(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: int
    subject: str
    active_form: str = ""
    status: Status = "pending"
    note: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    tokens_at_start: int | None = None
    tokens_spent: int | None = None

    def elapsed_secs(self, now: float) -> int | None:
        if self.started_at is None:
            return None
        end = self.finished_at if self.finished_at is not None else now
        return max(0, int(end - self.started_at))

    def line(self) -> str:
        text = f"{self.id}. [{self.status}] {self.subject}"
        if self.active_form and self.active_form != self.subject:
            text += f" ({self.active_form})"
        if self.note:
            text += f" - note: {self.note}"
        return text


class TaskStore:
    """The run's checklist. Ids start at 1 and are never reused, so the model can keep referring
    to a task it saw earlier even after compaction."""

    def __init__(self, tasks: list[Task] | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self.tasks: list[Task] = list(tasks or [])
        self._clock = clock

    @property
    def next_id(self) -> int:
        return max((t.id for t in self.tasks), default=0) + 1

    def get(self, task_id: int) -> Task | None:
        return next((t for t in self.tasks if t.id == task_id), None)

    def create(self, items: list[tuple[str, str | None]]) -> list[Task]:
        created = []
        for subject, active_form in items:
            task = Task(id=self.next_id, subject=subject, active_form=(active_form or "").strip())
            self.tasks.append(task)
            created.append(task)
        return created

    def set_status(self, task: Task, status: Status, *, tokens: int | None = None) -> None:
        if status == task.status:
            return
        now = self._clock()
        if status == "in_progress":
            if task.started_at is None:
                task.started_at = now
                task.tokens_at_start = tokens
            task.finished_at = None
        elif status == "completed":
            if task.started_at is None:
                task.started_at = now
            task.finished_at = now
            if tokens is not None and task.tokens_at_start is not None:
                task.tokens_spent = max(0, tokens - task.tokens_at_start)
        task.status = status

    @property
    def completed(self) -> int:
        return sum(1 for t in self.tasks if t.status == "completed")

    def event(self) -> dict[str, Any]:
        """The `tasks_updated` event (fields of `events.TasksUpdated` / `events.TaskLine`)."""
        now = self._clock()
        lines = [
            {
                "id": t.id,
                "subject": t.subject,
                "status": t.status,
                "active_form": t.active_form or t.subject,
                "elapsed_secs": t.elapsed_secs(now),
                "tokens_spent": t.tokens_spent,
                "origin": None,
                "note": t.note,
            }
            for t in self.tasks
        ]
        return {
            "type": "tasks_updated",
            "tasks": lines,
            "completed": self.completed,
            "total": len(self.tasks),
        }

    def render(self) -> str:
        if not self.tasks:
            return "No tasks. Create a checklist with task_create."
        head = f"Tasks ({self.completed}/{len(self.tasks)} completed):"
        return "\n".join([head, *(t.line() for t in self.tasks)])

    def soft_notes(self) -> list[str]:
        notes = []
        running = [t.id for t in self.tasks if t.status == "in_progress"]
        if len(running) > 1:
            ids = ", ".join(f"#{i}" for i in running)
            notes.append(
                f"Note: {len(running)} tasks are in progress ({ids}); keep one in progress at a time "
                "and mark the others pending or completed."
            )
        waiting = [t.id for t in self.tasks if t.status == "pending"]
        if not running and waiting:
            notes.append(
                f"Note: nothing is in progress while {len(waiting)} task(s) remain pending; mark the one "
                f"you work on next (#{waiting[0]}?) in_progress."
            )
        for t in self.tasks:
            if t.status == "blocked" and not t.note:
                notes.append(
                    f"Note: task #{t.id} is blocked without a note; add a note saying what blocks it."
                )
        return notes

    def to_dict(self) -> dict[str, Any]:
        return {"version": 1, "tasks": [t.model_dump(mode="json") for t in self.tasks]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, clock: Callable[[], float] = time.time) -> TaskStore:
        return cls([Task.model_validate(t) for t in data.get("tasks", [])], clock=clock)

    @classmethod
    def from_json(cls, text: str, *, clock: Callable[[], float] = time.time) -> TaskStore:
        return cls.from_dict(json.loads(text), clock=clock)


def task_store(ctx: ToolContext) -> TaskStore:
    if ctx.tasks is None:
        ctx.tasks = TaskStore()
    return ctx.tasks


def _tokens(ctx: ToolContext) -> int | None:
    return ctx.tokens_total


def _result(store: TaskStore, first_line: str) -> ToolResult:
    parts = [first_line, store.render(), *store.soft_notes()]
    return ToolResult(
        content="\n".join(parts),
        summary=f"{first_line} ({store.completed}/{len(store.tasks)} completed)",
    )


class NewTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    subject: str = Field(
        min_length=1, max_length=500, description="What to do, imperative (e.g. 'Run the tests')."
    )
    active_form: str | None = Field(
        default=None, max_length=500, description="Shown while in progress (e.g. 'Running the tests')."
    )


class TaskCreateArgs(ToolArgs):
    tasks: list[NewTask] = Field(min_length=1, max_length=50, description="Tasks to add, in order.")


class TaskCreate(Tool):
    name = "task_create"
    description = (
        "Add tasks to your checklist for multi-step work. New tasks are pending; "
        "returns the whole list with ids."
    )
    Args = TaskCreateArgs
    category = "session"

    async def run(self, args: TaskCreateArgs, ctx: ToolContext) -> ToolResult:
        store = task_store(ctx)
        created = store.create([(t.subject.strip(), t.active_form) for t in args.tasks])
        ctx.emit(store.event())
        ids = ", ".join(f"#{t.id}" for t in created)
        return _result(store, f"Created {len(created)} task(s): {ids}.")


class TaskChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int = Field(description="Task id.")
    status: Status | None = Field(default=None, description="New status.")
    subject: str | None = Field(default=None, min_length=1, max_length=500, description="New subject.")
    note: str | None = Field(
        default=None, max_length=2000, description="Why it is blocked, or what was found; empty clears it."
    )


class TaskUpdateArgs(ToolArgs):
    updates: list[TaskChange] = Field(min_length=1, max_length=50, description="Changes, by task id.")


class TaskUpdate(Tool):
    name = "task_update"
    description = (
        "Change tasks on your checklist: status (pending, in_progress, completed, blocked), subject or "
        "note. Keep one task in progress; give blocked tasks a note."
    )
    Args = TaskUpdateArgs
    category = "session"

    async def run(self, args: TaskUpdateArgs, ctx: ToolContext) -> ToolResult:
        store = task_store(ctx)
        # All ids are checked first so a batch is applied whole or not at all.
        unknown = [u.id for u in args.updates if store.get(u.id) is None]
        if unknown:
            known = ", ".join(f"#{t.id}" for t in store.tasks) or "none (create tasks with task_create)"
            missing = ", ".join(f"#{i}" for i in unknown)
            return ToolResult.error(f"unknown task id(s) {missing}; nothing was changed. Known ids: {known}.")
        tokens = _tokens(ctx)
        for update in args.updates:
            task = store.get(update.id)
            assert task is not None
            if update.subject is not None:
                task.subject = update.subject.strip()
            if update.note is not None:
                task.note = update.note.strip() or None
            if update.status is not None:
                store.set_status(task, update.status, tokens=tokens)
        ctx.emit(store.event())
        ids = ", ".join(f"#{u.id}" for u in args.updates)
        return _result(store, f"Updated {ids}.")


class TaskListArgs(ToolArgs):
    pass


class TaskList(Tool):
    name = "task_list"
    description = "Show your checklist: ids, subjects, statuses and notes."
    Args = TaskListArgs
    category = "session"

    async def run(self, args: TaskListArgs, ctx: ToolContext) -> ToolResult:
        store = task_store(ctx)
        parts = [store.render(), *store.soft_notes()]
        return ToolResult(
            content="\n".join(parts), summary=f"{store.completed}/{len(store.tasks)} tasks completed"
        )
