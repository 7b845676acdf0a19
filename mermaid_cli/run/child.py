"""What a subagent's run sees of its parent: its output (events into its own session file, then
tagged into the parent's stream) and its tools (the parent's set, narrowed), plus the source
that offers the `agent` tool in a registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mermaid_cli.core import events as ev
from mermaid_cli.run.output import Output
from mermaid_cli.tools.base import Tool, ToolRegistry

if TYPE_CHECKING:
    from mermaid_cli.core.types import ToolSpec


class ChildOutput(Output):
    """A child's events: into its own session file, then tagged into the parent's stream. Its
    text deltas stay out of the parent's stream (its report is the `agent` call's result)."""

    def __init__(self, parent: Output, agent_id: str, parent_call_id: str) -> None:
        super().__init__("text", parent.io, quiet=True)
        self.parent = parent
        self.agent_id = agent_id
        self.parent_call_id = parent_call_id
        self.started = True  # the parent's stream has started; the child emits no session_started

    def emit(self, event: ev._Event) -> None:
        if isinstance(event, ev.Text | ev.Reasoning):
            return
        if event.agent_id is None:  # a grandchild's events keep their own tags
            event = event.model_copy(
                update={"agent_id": self.agent_id, "parent_call_id": self.parent_call_id}
            )
        self.parent._stamp(event)  # one clock for the whole stream: the root run's
        if self.session is not None:
            self.session.append("event", event=event.to_dict())
        self.parent.emit(event)

    def _catch_hangup(self) -> None:
        pass  # the root run's output owns SIGHUP

    def install_logging(self, *, debug: bool = False) -> None:
        pass  # library logs stay with the root run's output


class NarrowedRegistry(ToolRegistry):
    """A child's view of its tools: the registry minus what its lineage denies, and only what its
    type allows."""

    def __init__(self, inner: ToolRegistry, *, deny: frozenset[str], allow: frozenset[str] | None) -> None:
        super().__init__([], absent=dict(inner.absent))
        self._inner, self._deny, self._allow = inner, deny, allow
        for name in deny:
            self.absent[name] = f"{name} is not available to this subagent"

    def _offered(self, name: str) -> bool:
        return name not in self._deny and (self._allow is None or name in self._allow)

    def get(self, name: str) -> Tool | None:
        return self._inner.get(name) if self._offered(name) else None

    def current(self) -> list[Tool]:
        return [t for t in self._inner.current() if self._offered(t.name)]

    def specs(self) -> list[ToolSpec]:
        return [s for s in self._inner.specs() if self._offered(s.name)]

    def names(self) -> list[str]:
        return [s.name for s in self.specs()]

    def add_dynamic(self, source: object) -> None:
        self._inner.add_dynamic(source)

    def __contains__(self, name: str) -> bool:
        return self._offered(name) and name in self._inner

    def __len__(self) -> int:
        return len(self.current())


class AgentToolSource:
    """Offers the one `agent` tool through the registry's dynamic sources (they survive the
    spec cache's lazy load)."""

    def __init__(self, tool: Tool) -> None:
        self._tool = tool

    def current_tools(self) -> list[Tool]:
        return [self._tool]

    def lookup(self, name: str) -> Tool | None:
        return self._tool if name == self._tool.name else None
