"""The `agent` tool: hand a self-contained task to a subagent (a child run with its own
conversation), continue one by its id, list this run's children or discard one.

The tool only validates and dispatches: the child runs are built and driven by a `Spawner` the run
layer puts on the `ToolContext` (`run.subagents`), because a child run is assembled exactly like
the parent's and `tools/` may not import `run/`.
"""

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import Field

from mermaid_cli.core.defaults import empty_list
from mermaid_cli.core.types import ToolResult, ToolSpec
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext, schema_of

#: the `tool#N` id of the call being run, set by the loop per call (each call runs in its own
#: task, so concurrent `agent` calls each see their own): a child's events name it
current_call_id: ContextVar[str] = ContextVar("current_call_id", default="")


@dataclass(frozen=True)
class SpawnRequest:
    """One spawn, as the model asked for it (the spawner narrows it further)."""

    prompt: str
    description: str
    agent_type: str
    model: str | None
    isolation: Literal["shared", "worktree"] | None
    deny_tools: tuple[str, ...]
    deny_servers: tuple[str, ...]
    call_id: str


class Spawner(Protocol):
    """Runs this run's children (implemented in `run.subagents`)."""

    def describe_types(self) -> str:
        """One line per agent type, for the tool's description."""
        ...

    async def spawn(self, request: SpawnRequest) -> ToolResult: ...

    async def follow_up(self, agent_id: str, prompt: str, call_id: str) -> ToolResult: ...

    def list_children(self) -> ToolResult: ...

    def delete(self, agent_id: str) -> ToolResult: ...


class AgentArgs(ToolArgs):
    prompt: str | None = Field(
        None, description="The whole task, self-contained: the child sees none of this conversation."
    )
    description: str = Field("", description="A short label (3-6 words).")
    type: str = Field("general", description="Agent type (see the list above).")
    model: str | None = Field(
        None, description="provider/model for the child (default: the type's or this run's)."
    )
    agent_id: str | None = Field(
        None, description="Continue this child (with `prompt`), or the child to delete."
    )
    action: Literal["spawn", "list", "delete"] = Field(
        "spawn", description="spawn (or continue with agent_id) | list | delete."
    )
    isolation: Literal["shared", "worktree"] | None = Field(
        None, description="worktree: the child works in a private git worktree; its diff lands as one patch."
    )
    deny_tools: list[str] = Field(default_factory=empty_list, description="Tools the child may not use.")
    deny_servers: list[str] = Field(default_factory=empty_list, description="MCP servers the child may not use.")


DESCRIPTION = (
    "Run a subagent: a fresh model conversation that does one self-contained task with its own "
    "tools and reports back. Its authority never exceeds yours. Several agent calls in one message "
    "run concurrently. The result ends with [agent_id: aN]; pass agent_id with a new prompt to ask "
    "that child a follow-up. action=list lists your children, action=delete discards one.\nTypes:\n"
)


class AgentTool(Tool):
    name = "agent"
    description = DESCRIPTION
    Args = AgentArgs
    category = "subagent"

    def __init__(self, types: str, schema: dict[str, Any] | None = None) -> None:
        # per instance: the type list comes from this run's config; one spec object for the run
        # (`schema`: `schema_of(AgentArgs)` as the spec cache kept it)
        input_schema = schema if schema is not None else schema_of(AgentArgs)
        self._spec = ToolSpec(name=self.name, description=DESCRIPTION + types, input_schema=input_schema)

    def spec(self) -> ToolSpec:
        return self._spec

    def category_for(self, arguments: dict[str, object]) -> str:
        # listing or discarding children starts nothing
        return "session" if arguments.get("action") in ("list", "delete") else self.category

    async def run(self, args: AgentArgs, ctx: ToolContext) -> ToolResult:
        spawner = ctx.agents
        if spawner is None:
            return ToolResult.error("subagents are not available in this run")
        if args.action == "list":
            return spawner.list_children()
        if args.action == "delete":
            if not args.agent_id:
                return ToolResult.error("action=delete needs agent_id")
            return spawner.delete(args.agent_id)
        if not args.prompt or not args.prompt.strip():
            return ToolResult.error("agent needs a prompt: the whole task, self-contained")
        call_id = current_call_id.get()
        if args.agent_id:
            return await spawner.follow_up(args.agent_id, args.prompt, call_id)
        return await spawner.spawn(
            SpawnRequest(
                prompt=args.prompt,
                description=args.description,
                agent_type=args.type,
                model=args.model,
                isolation=args.isolation,
                deny_tools=tuple(args.deny_tools),
                deny_servers=tuple(args.deny_servers),
                call_id=call_id,
            )
        )
