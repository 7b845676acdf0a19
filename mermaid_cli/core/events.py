"""The event protocol (JSONL, protocol_version 1): the single source of truth (DESIGN.md §2).

The same models write stdout, the session file and the test snapshots; `docs/events.schema.json`
is generated from them (`python -m mermaid_cli.core.events > docs/events.schema.json`).
Field order is wire order. Fields listed in `_omit_unset` are left out of a line when they hold
their "absent" value (None, or False for `fuzzy`), exactly as the original Mermaid does.
"""

import json
from typing import Annotated, Any, BinaryIO, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from mermaid_cli.core.defaults import empty_list

PROTOCOL_VERSION = 1


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    _omit_unset: ClassVar[frozenset[str]] = frozenset()
    _flags: ClassVar[frozenset[str]] = frozenset({"fuzzy"})
    #: set on every event emitted inside a subagent (additive to protocol 1): the child's id and
    #: the parent's `agent` call that runs it; left out of the line otherwise
    agent_id: str | None = None
    parent_call_id: str | None = None
    #: milliseconds since the run started, stamped as the event is emitted (additive to protocol
    #: 1: a reader that ignores unknown fields is unaffected); the last field of every line
    ts: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        # absent when unset; last when set, in this order (subagent tags, then the timestamp)
        for key in ("agent_id", "parent_call_id", "ts"):
            value = data.pop(key, None)
            if value is not None:
                data[key] = value
        for key in self._omit_unset:
            # `is`, not `==`: 0 == False, and an exit code of 0 is a value, not an absence;
            # only a flag (`fuzzy`) is absent when False
            value = data.get(key)
            if key in data and (value is None or (value is False and key in self._flags)):
                del data[key]
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


class UsageInfo(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


class DecisionInfo(BaseModel):
    verdict: Literal["allow", "deny", "ask"]
    by: str
    reason: str | None = None


class SessionStarted(_Event):
    type: Literal["session_started"] = "session_started"
    protocol_version: int = PROTOCOL_VERSION
    cli_version: str
    model: str
    task_id: str | None = None
    session_id: str
    cwd: str = ""
    safety_mode: str = "auto"
    tools: list[str] = Field(default_factory=empty_list)
    limits: dict[str, Any] = Field(default_factory=dict)
    policy_digest: str | None = None
    #: the kernel sandbox in force for processes started for the model (DESIGN §4.1); None when
    #: the run stopped before it was built
    sandbox: dict[str, Any] | None = None
    #: the enabled plugins whose assets this run loaded (docs/extensions.md)
    plugins: list[str] = Field(default_factory=empty_list)
    #: how many skills the system prompt's index knows (after dedupe)
    skills: int = 0


class Text(_Event):
    type: Literal["text"] = "text"
    delta: str


class Reasoning(_Event):
    type: Literal["reasoning"] = "reasoning"
    delta: str


class FileTargetInfo(BaseModel):
    """One file a call touches, as the gate judges it: the resolved absolute path (symlinks,
    `~` and `..` followed) and the operation."""

    path: str
    operation: Literal["read", "create", "modify", "delete"]


class ToolStarted(_Event):
    type: Literal["tool_started"] = "tool_started"
    _omit_unset = frozenset({"targets"})
    call_id: str
    name: str = ""
    arguments: dict[str, Any] | None = None
    #: file tools only: every file the call touches, resolved (symlinks, `~`, `..`)
    targets: list[FileTargetInfo] | None = None


class ToolFinished(_Event):
    type: Literal["tool_finished"] = "tool_finished"
    _omit_unset = frozenset({"web", "fuzzy", "exit_code"})
    call_id: str
    name: str
    status: Literal["success", "error", "cancelled"]
    summary: str
    error: str | None = None
    web: dict[str, Any] | None = None
    fuzzy: bool = False
    duration_ms: int = 0
    output: str = ""
    exit_code: int | None = None
    decision: DecisionInfo | None = None


class ApprovalRequired(_Event):
    type: Literal["approval_required"] = "approval_required"
    call_id: str
    tool: str
    risk: str
    prompt: str


class ApprovalDecided(_Event):
    type: Literal["approval_decided"] = "approval_decided"
    call_id: str
    tool: str
    verdict: Literal["allow", "deny"]
    by: str
    reason: str | None = None


class TaskLine(BaseModel):
    id: int
    subject: str
    status: str
    active_form: str = ""
    elapsed_secs: int | None = None
    tokens_spent: int | None = None
    origin: str | None = None
    note: str | None = None


class TasksUpdated(_Event):
    type: Literal["tasks_updated"] = "tasks_updated"
    tasks: list[TaskLine]
    completed: int
    total: int


class Error(_Event):
    type: Literal["error"] = "error"
    message: str
    code: str | None = None
    retryable: bool = False


class TurnDone(_Event):
    type: Literal["turn_done"] = "turn_done"
    total_tokens: int | None = None
    stop_reason: str | None = None
    usage: UsageInfo | None = None
    cost_usd: float | None = None


class VerifyFinished(_Event):
    type: Literal["verify_finished"] = "verify_finished"
    command: str
    exit_code: int
    attempt: int
    output: str = ""


class Result(_Event):
    type: Literal["result"] = "result"
    _omit_unset = frozenset({"structured_output", "agents"})
    response: str
    reasoning: str | None = None
    total_tokens: int = 0
    errors: list[str] = Field(default_factory=empty_list)
    session_id: str
    structured_output: Any = None
    status: str = "success"
    exit_code: int = 0
    num_turns: int = 0
    duration_ms: int = 0
    usage: UsageInfo = Field(default_factory=UsageInfo)
    cost_usd: float | None = None
    tool_calls: int = 0
    tool_errors: int = 0
    blocked: list[dict[str, Any]] = Field(default_factory=empty_list)
    files_changed: list[str] = Field(default_factory=empty_list)
    untrusted_content: bool = False
    #: per-subagent breakdown (`agent_id`, `type`, `status`, `usage`, `cost_usd`, `num_turns`);
    #: usage and cost above already include them. Left out when the run spawned none.
    agents: list[dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        # structured_output may legitimately be null/false; omit it only when never set.
        if "structured_output" in self.model_fields_set:
            data["structured_output"] = self.structured_output
            # keep it right after session_id, where the original puts it
            data = _move_after(data, "structured_output", "session_id")
        return data


class AgentStarted(_Event):
    """A subagent starts (a spawn or a follow-up); its own events follow, tagged with its id."""

    type: Literal["agent_started"] = "agent_started"
    # `agent_id` names the child (ids are unique across the run's whole tree) and
    # `parent_call_id` the `agent` call that runs it, exactly as they tag the child's own events
    agent_type: str
    description: str = ""
    follow_up: bool = False


class AgentFinished(_Event):
    """A subagent's drive ended: its status, and what it spent (already in the run's totals)."""

    type: Literal["agent_finished"] = "agent_finished"
    agent_type: str
    status: str = "success"
    usage: UsageInfo = Field(default_factory=UsageInfo)
    cost_usd: float | None = None
    num_turns: int = 0
    duration_ms: int = 0


def _move_after(data: dict[str, Any], key: str, anchor: str) -> dict[str, Any]:
    value = data.pop(key)
    out: dict[str, Any] = {}
    for k, v in data.items():
        out[k] = v
        if k == anchor:
            out[key] = value
    return out


Event = Annotated[
    SessionStarted
    | Text
    | Reasoning
    | ToolStarted
    | ToolFinished
    | ApprovalRequired
    | ApprovalDecided
    | TasksUpdated
    | Error
    | TurnDone
    | VerifyFinished
    | AgentStarted
    | AgentFinished
    | Result,
    Field(discriminator="type"),
]


_adapter: TypeAdapter[Any] | None = None


def parse_event(line: str | bytes) -> _Event:
    global _adapter
    if _adapter is None:
        _adapter = TypeAdapter(Event)
    return _adapter.validate_json(line)


def json_schema() -> dict[str, Any]:
    schema = TypeAdapter(Event).json_schema()
    schema["title"] = "Mermaid run event (protocol_version 1)"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def encode_line(event: _Event) -> bytes:
    """One JSONL line. Lone surrogates (undecodable bytes a tool produced) become U+FFFD-safe
    replacements, so every line is valid UTF-8 JSON whatever a tool printed."""
    return _line_bytes(event.to_json())


def _line_bytes(encoded: str) -> bytes:
    return (encoded + "\n").encode("utf-8", errors="replace")


class JsonlWriter:
    """Writes events to a binary stream, flushed per line. A reader that goes away (`| head -1`)
    closes the writer quietly: the run goes on and exits with its own code."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self.closed = False

    def write(self, event: _Event) -> None:
        self.write_bytes(encode_line(event))

    def write_json(self, encoded: str) -> None:
        """An event already encoded (`to_json()`)."""
        self.write_bytes(_line_bytes(encoded))

    def write_bytes(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            self._stream.write(data)
            self._stream.flush()
        except (BrokenPipeError, ValueError, OSError):
            self.closed = True


if __name__ == "__main__":  # pragma: no cover - regenerates docs/events.schema.json
    print(json.dumps(json_schema(), indent=2, sort_keys=False))
