"""The loop's own per-call parameters, `scratchpad` and `background`, which every tool takes (MCP
tools included). They are taken out of the arguments before the tool, its hooks, the gate or a
remote server sees them, and decide what happens to the call rather than what it is called with:

- `scratchpad: NAME` saves the output under NAME in the run's scratchpad and returns a short
  note instead; `glob`, `grep` and `web_fetch` then lift their caps (`uncapped()`).
- `background: true` returns a task id at once; the result arrives later as a message of its
  own (`agent.background`).

A tool whose own schema has a parameter of that name keeps it, untouched. These two are the only
arguments type-checked here: a wrong type refuses the call (saying what was expected) rather than
silently blocking or dropping output; `null` counts as absent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mermaid_cli.core.types import ToolCallBlock, ToolResult, ToolSpec
from mermaid_cli.tools.scratchpad_store import ScratchpadStore, name_problem

if TYPE_CHECKING:  # the registry advertises the options: this module must not import it
    from mermaid_cli.tools.base import Tool

SCRATCHPAD = "scratchpad"
BACKGROUND = "background"
#: on every tool's schema, described once in the system prompt (`PROMPT_LINE`), not per tool:
#: two descriptions on each of ~20 tools were 4 KB of every request
PARAMETERS: dict[str, dict[str, Any]] = {SCRATCHPAD: {"type": "string"}, BACKGROUND: {"type": "boolean"}}
PROMPT_LINE = (
    "Every tool also takes `scratchpad` (an entry name: the output is saved there instead of "
    "returned, uncapped; read it with scratchpad_read) and `background` (true: a task id now, the "
    "result later as its own message)."
)
_EXPECTED = {SCRATCHPAD: (str, "a string (an entry name)"), BACKGROUND: (bool, "a boolean")}

_UNCAPPED: ContextVar[bool] = ContextVar("mermaid_uncapped_output", default=False)


def uncapped() -> bool:
    """True inside a call whose output goes to the scratchpad: glob, grep and web_fetch return
    their whole output (the scratchpad holds it; the conversation does not)."""
    return _UNCAPPED.get()


def own_parameters(tool: Tool) -> set[str]:
    properties = tool.spec().input_schema.get("properties")
    return set(properties) if isinstance(properties, dict) else set()


def advertise(spec: ToolSpec) -> ToolSpec:
    """`spec` with `scratchpad` and `background` added, except where the tool has its own."""
    schema = spec.input_schema
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, dict):
        return spec
    extra = {k: v for k, v in PARAMETERS.items() if k not in properties}
    if not extra:
        return spec
    return spec.model_copy(update={"input_schema": {**schema, "properties": {**properties, **extra}}})


@dataclass(frozen=True)
class CallOptions:
    """The options any tool call may carry (scratchpad, background)."""

    scratchpad: str | None = None
    background: bool = False

    async def execute(self, run: Callable[[], Awaitable[ToolResult]], store: ScratchpadStore) -> ToolResult:
        """Run the tool (uncapped when its output goes to the scratchpad) and file the output."""
        if self.scratchpad is None:
            return await run()
        token = _UNCAPPED.set(True)
        try:
            result = await run()
        finally:
            _UNCAPPED.reset(token)
        return save(result, self.scratchpad, store)


def split(tool: Tool | None, call: ToolCallBlock) -> tuple[CallOptions, ToolCallBlock] | ToolResult:
    """(the options, the call without them), or the refusal of a wrongly typed option."""
    args = call.arguments
    if tool is None or not isinstance(args, dict) or not (set(PARAMETERS) & set(args)):
        return CallOptions(), call
    own = own_parameters(tool)
    rest = dict(args)
    found: dict[str, Any] = {}
    for key, (kind, expected) in _EXPECTED.items():
        if key in own or key not in rest:
            continue  # the tool's own parameter of that name is the tool's
        value = rest.pop(key)
        if value is None:
            continue
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            return ToolResult.error(
                f"invalid arguments for {call.name}: {key} must be {expected}, "
                f"got {type(value).__name__} {value!r:.60}; the call was not run"
            )
        found[key] = value
    name = found.get(SCRATCHPAD)
    if name is not None and (problem := name_problem(name)):
        return ToolResult.error(f"invalid arguments for {call.name}: {problem}; the call was not run")
    options = CallOptions(scratchpad=name, background=bool(found.get(BACKGROUND, False)))
    return options, call.model_copy(update={"arguments": rest})


def save(result: ToolResult, name: str, store: ScratchpadStore) -> ToolResult:
    """File `result`'s text under `name` and return a note in its place (images stay attached;
    an error comes back inline as well, so the failure is not hidden)."""
    text = result.content
    dropped = store.save(name, text)
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    note = (
        f"Saved the output to scratchpad entry {name!r} ({len(text)} characters, {lines} lines); "
        f"read it with scratchpad_read, write it to a file with scratchpad_save_file."
    )
    if dropped:
        note += f" Dropped older entries to make room: {', '.join(dropped)}."
    if result.is_error:
        note = f"{text}\n\n{note}"
    summary = f"{result.summary or 'output'} -> scratchpad {name}"
    return result.model_copy(update={"content": note, "summary": summary[:300]})
