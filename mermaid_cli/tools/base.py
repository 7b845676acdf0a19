"""Tool base class, the per-run context tools receive, and the registry.

A tool declares `name`, `description`, `category` and an `Args` pydantic model whose field
descriptions become the JSON schema the model sees (short and exact: paid on every request).
`run` returns a `ToolResult`; a tool that raises is turned into an error result by the loop.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from mermaid_cli.config.loader import Settings
from mermaid_cli.core.kept import KeptForms
from mermaid_cli.core.text import cap_text as text_cap
from mermaid_cli.core.types import ToolCallBlock, ToolResult, ToolSpec
from mermaid_cli.tools.scratchpad_store import ScratchpadStore

if TYPE_CHECKING:  # the stores live with their tools; only their types are needed here
    from mermaid_cli.integrations.web.snapshots import SnapshotStore
    from mermaid_cli.security.sandbox import PreparedSandbox
    from mermaid_cli.tools.agent import Spawner
    from mermaid_cli.tools.context import ArchivedMessage
    from mermaid_cli.tools.context_check import ContextStatus
    from mermaid_cli.tools.paths import ResolvedPath
    from mermaid_cli.tools.processes import ProcessRegistry
    from mermaid_cli.tools.tasks import TaskStore

# Every result the model sees is capped; the note says how much was cut.
MAX_RESULT_CHARS = 30_000


class ToolArgs(BaseModel):
    """Base for argument models: unknown arguments are an error the model sees."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


def _identity(text: str) -> str:
    return text


@dataclass
class ToolContext:
    """What a tool may use during a run, as typed fields (no string-keyed state bag); `cleanups`
    run when the run ends, however it ends."""

    project_root: Path
    session_id: str = ""
    settings: Settings = field(default_factory=Settings)
    progress: Callable[[str], None] = lambda _line: None
    #: emit a protocol event (an `mermaid_cli.core.events` model), e.g. `tasks_updated`
    emit: Callable[[Any], None] = lambda _event: None
    #: a person is at a TTY and may be asked (never true in CI)
    interactive: bool = False
    checkpoint: Callable[[list[Path], str], object] | None = None
    child_env: dict[str, str] | None = None
    #: the safety mode in force (memory refuses writes in read_only)
    safety_mode: str = "auto"
    #: the user's config dir (user memory lives under it); None: user scope unavailable
    user_config_dir: Path | None = None
    #: the run's redactor: memory refuses anything it would hide
    redact: Callable[[str], str] = _identity
    #: every message of the run, compacted ones included (`context_archive`)
    archive: Callable[[], list[ArchivedMessage]] | None = None
    #: the run's task list (`task_*` tools), restored on --resume
    tasks: TaskStore | None = None
    #: tokens the run has used so far (task list bookkeeping)
    tokens_total: int | None = None
    #: pages `web_fetch` fetched this run
    web_snapshots: SnapshotStore | None = None
    #: background processes started this run
    background: ProcessRegistry | None = None
    #: "python" forces grep's Python walker (tests); None: ripgrep when installed
    grep_backend: str | None = None
    #: the run's kernel sandbox (DESIGN §4.1); every process started for the model uses it
    sandbox: PreparedSandbox | None = None
    #: which model message the current calls came from (the loop counts them from 1); a
    #: `sequential` tool (the computer) uses it to stop a message's later calls after one fails
    message_seq: int = 0
    #: the second check of an outside path by the file tools (`tools.paths.check_external`):
    #: None to allow or the refusal; unset, every outside path is refused
    external_access: Callable[[ResolvedPath, str], str | None | Awaitable[str | None]] | None = None
    #: the gate's path rules (`PolicyGate.path_rules`: `.git/` and `.mermaid/` read-only, the
    #: sandbox's secrets unreadable) for a resolved path and an operation: the file tools apply
    #: them again where they resolve the path themselves, so a symlink swapped after the gate's
    #: check meets them there (`tools.paths.resolve_for_tool`); None or the refusal
    path_rules: Callable[[str, str], str | None] | None = None
    #: allow every outside path without asking (tests)
    allow_external: bool = False
    #: runs this run's subagents (the `agent` tool); None: no subagents here
    agents: Spawner | None = None
    #: the live context window's figures (`context_check`); set by the loop
    context_status: Callable[[], ContextStatus] | None = None
    #: tool outputs saved with the `scratchpad` parameter (`tools.call_options`)
    scratchpad: ScratchpadStore = field(default_factory=ScratchpadStore)
    cleanups: list[Callable[[], Awaitable[None] | None]] = field(default_factory=list)


class Tool:
    name: ClassVar[str]
    description: ClassVar[str]
    Args: ClassVar[type[BaseModel]]
    # read | edit | shell | process | web | mcp | subagent | memory | session
    category: ClassVar[str] = "read"
    #: a call starts a process under the run's sandbox (the sandbox prepares as the call is judged)
    starts_process: ClassVar[bool] = False

    def category_for(self, arguments: dict[str, Any]) -> str:
        """The policy category of one call; tools whose risk depends on their arguments override it."""
        return self.category

    def spec(self) -> ToolSpec:
        # Built once per class: a schema is paid for on every turn of every run otherwise.
        cached = _SPECS.get(type(self))
        if cached is None:
            cached = ToolSpec(name=self.name, description=self.description, input_schema=schema_of(self.Args))
            _SPECS[type(self)] = cached
        return cached

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:  # pragma: no cover - abstract
        raise NotImplementedError


_SPECS: dict[type[Tool], ToolSpec] = {}


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """A compact JSON schema for `model`: no titles, no `additionalProperties: false` (the Args
    model refuses an unknown argument by name anyway, and the keyword was ~600 bytes of every
    request), no `$defs` indirection where avoidable, and an
    optional `X | None = None` field shown as plain `X` (leaving it out means None; the arguments
    are still validated by `model`, which accepts an explicit null). Every request carries these
    schemas, so their bytes are paid on every turn. Built once per model (pydantic takes ~5 ms for
    a large one, and tools with per-run descriptions ask every turn); each call gets its own copy."""
    return json.loads(_schema_json(model))


@functools.cache
def _schema_json(model: type[BaseModel]) -> str:
    return json.dumps(_compact(model.model_json_schema()))


def _compact(node: Any) -> Any:
    if isinstance(node, list):
        return [_compact(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {
        k: _compact(v)
        for k, v in node.items()
        if (k != "title" or not isinstance(v, str)) and not (k == "additionalProperties" and v is False)
    }
    branches = out.get("anyOf")
    if (
        "default" in out
        and out["default"] is None
        and isinstance(branches, list)
        and len(branches) == 2
        and {"type": "null"} in branches
    ):
        (kept,) = [b for b in branches if b != {"type": "null"}]
        if isinstance(kept, dict):
            rest = {k: v for k, v in out.items() if k not in ("anyOf", "default")}
            out = {**kept, **rest}
    return out


def cap_text(text: str, limit: int = MAX_RESULT_CHARS) -> str:
    """A tool result within `limit` characters (head and tail kept; see `core.text.cap_text`)."""
    return text_cap(text, limit)


class ToolRegistry:
    def __init__(self, tools: list[Tool] | None = None, absent: dict[str, str] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        # Tools deliberately not offered this run -> what the model is told if it calls one anyway.
        self.absent: dict[str, str] = dict(absent or {})
        # Tools that come and go during a run (MCP servers, promoted deferred tools).
        self.dynamic: list[Any] = []
        #: `[tools]` filters (`tools.filters.ToolFilter`): every tool, MCP ones too, passes `admit`
        self.filter: Any = None
        #: each spec as advertised (`call_options.advertise`), the same object while its tool's
        #: spec is: the requests encode an unchanged tool once
        self.advertised: KeptForms[ToolSpec, ToolSpec] = KeptForms()
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def kept_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema of the run-made tool `name` kept by the spec cache, if any
        (`tools.spec_cache.KEPT_SCHEMAS`): None here, built afresh."""
        return None

    def apply_filter(self, tool_filter: Any) -> None:
        """Keep only the tools `tool_filter.admit`s (now and as dynamic sources add them); a
        refused tool's call gets the reason instead of running."""
        self.filter = tool_filter
        for name, tool in list(self._tools.items()):
            admitted = tool_filter.admit(tool)
            if admitted is None:
                del self._tools[name]
                self.absent[name] = tool_filter.refusal(name)
            else:
                self._tools[name] = admitted

    def _admit(self, tool: Tool | None) -> Tool | None:
        if tool is None or self.filter is None:
            return tool
        return self.filter.admit(tool)

    def _dynamic_tools(self) -> list[Tool]:
        tools = []
        for source in self.dynamic:
            for tool in source.current_tools():
                admitted = self._admit(tool)
                if admitted is not None and admitted.name not in self._tools:
                    tools.append(admitted)
        return tools

    def add_dynamic(self, source: Any) -> None:
        """`source` has `current_tools() -> list[Tool]` (offered this turn) and `lookup(name)`."""
        self.dynamic.append(source)

    def get(self, name: str) -> Tool | None:
        tool = self._tools.get(name)
        if tool is None:
            for source in self.dynamic:
                tool = self._admit(source.lookup(name))
                if tool is not None:
                    break
        return tool

    def current(self) -> list[Tool]:
        return [*self._tools.values(), *self._dynamic_tools()]

    def names(self) -> list[str]:
        return [t.name for t in self.current()]

    def specs(self) -> list[ToolSpec]:
        from mermaid_cli.tools.call_options import advertise  # `scratchpad`, `background`

        return self.advertised.forms([t.spec() for t in self.current()], None, advertise)

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def bind(self, call: ToolCallBlock) -> tuple[Tool, Any] | ToolResult:
        """Resolve a call to its tool and validated arguments, or an error result for the model."""
        tool = self.get(call.name)
        if tool is None and call.name in self.absent:
            return ToolResult.error(self.absent[call.name])
        if tool is None and self.filter is not None and (refused := self.filter.refusal(call.name)):
            return ToolResult.error(refused)
        if tool is None:
            known = ", ".join(sorted(self.names())) or "none"
            return ToolResult.error(f"unknown tool {call.name!r}; available tools: {known}")
        if call.arguments is None:
            raw = (call.raw_arguments or "")[:200]
            return ToolResult.error(
                f"arguments for {call.name} are not a JSON object: {raw!r}. Send the arguments as a JSON object."
            )
        try:
            args = tool.Args.model_validate(call.arguments)
        except ValidationError as exc:
            return ToolResult.error(f"invalid arguments for {call.name}: {_describe(exc)}")
        return tool, args


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """Parse a model's JSON argument text; None when it is not a JSON object."""
    if raw.strip() == "":
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
