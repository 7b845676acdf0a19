"""Where a run sits in a tree of subagents, and the authority it holds there: the agent types
(built-in and `[agents.types.NAME]`), the terms a child is spawned under (recorded once, replayed
on every follow-up), and what the whole tree shares (child ids, the in-flight limit, the
per-agent breakdown of the result). Authority only narrows: a child's mode is the stricter of
its parent's live mode and its type's ceiling, and deny lists only grow down the tree.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from mermaid_cli.config.sections.safety import SafetyMode

if TYPE_CHECKING:
    from mermaid_cli.agent.loop import Agent
    from mermaid_cli.config.loader import Settings
    from mermaid_cli.providers.resolve import ResolvedModel

#: strictest first
MODE_ORDER: tuple[SafetyMode, ...] = ("read_only", "ask", "auto", "full_access")
MAX_IN_FLIGHT = 10
#: what a child is never offered unless granted (memory is granted, not inherited)
NEVER_INHERITED = frozenset({"memory"})
READ_ONLY_TOOLS = (
    "read_file",
    "glob",
    "grep",
    "execute_command",
    "web_fetch",
    "web_search",
    "task_create",
    "task_update",
    "task_list",
    "context_archive",
    "compact_context",
    "agent",
)
EXPLORE_PREAMBLE = (
    "You are an explore subagent: read and search to answer the task below, and change nothing. "
    "Report only what you found in files or command output, naming the paths; never invent "
    "findings, and say plainly when you found nothing."
)
REVIEW_PREAMBLE = (
    "You are a review subagent: review what the task below names and change nothing. Report each "
    "finding with its file and line, most severe first (critical, high, medium, low), and only "
    "findings you can point to in the code."
)


def stricter(a: SafetyMode, b: SafetyMode) -> SafetyMode:
    return a if MODE_ORDER.index(a) <= MODE_ORDER.index(b) else b


@dataclass(frozen=True)
class AgentType:
    """A kind of subagent: what it is for, its safety ceiling and its tools."""

    name: str
    description: str
    ceiling: SafetyMode = "full_access"
    #: the tools a child of this type is offered (None: the parent's)
    tools: tuple[str, ...] | None = None
    preamble: str = ""
    model: str | None = None
    isolation: Literal["shared", "worktree"] = "shared"


BUILTIN_TYPES: dict[str, AgentType] = {
    "general": AgentType("general", "the full tool set, for work that changes things"),
    "explore": AgentType(
        "explore",
        "read-only search and reading; reports only what it found",
        "read_only",
        READ_ONLY_TOOLS,
        EXPLORE_PREAMBLE,
    ),
    "review": AgentType(
        "review",
        "read-only review; findings in severity order",
        "read_only",
        READ_ONLY_TOOLS,
        REVIEW_PREAMBLE,
    ),
}


def agent_types(settings: Settings) -> dict[str, AgentType]:
    """The built-in types, then the config's (which cannot redefine a built-in one)."""
    types = dict(BUILTIN_TYPES)
    for name, spec in settings.agents.types.items():
        types[name] = AgentType(
            name,
            spec.description,
            spec.safety,
            tuple(spec.tools) if spec.tools is not None else None,
            spec.preamble,
            spec.model,
            spec.isolation,
        )
    return types


@dataclass(frozen=True)
class ChildTerms:
    """What a child was spawned under; a follow-up runs under these, not the parent's current ones."""

    agent_id: str
    agent_type: AgentType
    description: str
    mode: SafetyMode
    deny_tools: frozenset[str]
    deny_servers: frozenset[str]
    model: str | None
    isolation: Literal["shared", "worktree"]


@dataclass
class AgentRecord:
    """One child of the tree, for `action: list` and the result's per-agent breakdown."""

    terms: ChildTerms
    parent_id: str | None
    session_path: Path
    status: str = "running"
    num_turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    busy: bool = False


@dataclass
class Tree:
    """Shared by every run of one tree: child ids are unique in it, at most `MAX_IN_FLIGHT`
    children run at once, and the root's result lists every child."""

    records: dict[str, AgentRecord] = field(default_factory=dict)
    #: agent types enabled plugins ship (`agents = [...]` assets), for every run of the tree; a
    #: built-in or config type of the same name wins
    plugin_types: dict[str, AgentType] = field(default_factory=dict)
    in_flight: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(MAX_IN_FLIGHT))
    _next: int = 0

    def new_id(self) -> str:
        self._next += 1
        while f"a{self._next}" in self.records:  # ids restored from a resumed session
            self._next += 1
        return f"a{self._next}"

    def breakdown(self) -> list[dict[str, object]]:
        return [
            {
                "agent_id": agent_id,
                "parent": r.parent_id,
                "type": r.terms.agent_type.name,
                "description": r.terms.description,
                "status": r.status,
                "num_turns": r.num_turns,
                "usage": {"input_tokens": r.input_tokens, "output_tokens": r.output_tokens},
                "cost_usd": round(r.cost_usd, 6) if r.cost_usd is not None else None,
            }
            for agent_id, r in self.records.items()
        ]


@dataclass(frozen=True)
class Lineage:
    """A run's place in the tree. The root has depth 0 and no terms; a child carries its terms,
    its parent's loop (the budget is the root's) and where its session lives."""

    tree: Tree
    depth: int = 0
    terms: ChildTerms | None = None
    parent_call_id: str = ""
    parent_agent: Agent | None = None
    session_path: Path | None = None
    #: the tools no run below this one may use (the union down the tree)
    deny_tools: frozenset[str] = frozenset()
    deny_servers: frozenset[str] = frozenset()
    #: the parent's deadline (the run's monotonic clock): a child never outlives it
    deadline: float = float("inf")
    #: the parent's model: a child on the same model borrows its client
    model: ResolvedModel | None = None

    @property
    def agent_id(self) -> str | None:
        return self.terms.agent_id if self.terms is not None else None
