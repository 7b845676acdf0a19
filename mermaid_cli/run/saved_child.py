"""A child's terms as a parent's session keeps them (`Subagents.restore` and `_save`): a
pydantic model of its own, so that a run which never saves or restores a child does not build it
(issue 23)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from mermaid_cli.config.sections.safety import SafetyMode
from mermaid_cli.run.lineage import AgentRecord, AgentType, ChildTerms


class SavedChild(BaseModel):
    """A child's terms as the parent's session keeps them, so a follow-up after --resume still
    runs under the spawn's terms."""

    model_config = ConfigDict(extra="ignore")

    agent_id: str
    type: str
    description: str = ""
    ceiling: SafetyMode = "full_access"
    tools: list[str] | None = None
    preamble: str = ""
    type_model: str | None = None
    mode: SafetyMode
    deny_tools: list[str] = []
    deny_servers: list[str] = []
    model: str | None = None
    isolation: Literal["shared", "worktree"] = "shared"
    num_turns: int = 0
    status: str = "success"

    @classmethod
    def of(cls, record: AgentRecord) -> SavedChild:
        t = record.terms
        kind = t.agent_type
        return cls(
            agent_id=t.agent_id,
            type=kind.name,
            description=t.description,
            ceiling=kind.ceiling,
            tools=list(kind.tools) if kind.tools is not None else None,
            preamble=kind.preamble,
            type_model=kind.model,
            mode=t.mode,
            deny_tools=sorted(t.deny_tools),
            deny_servers=sorted(t.deny_servers),
            model=t.model,
            isolation=t.isolation,
            num_turns=record.num_turns,
            status=record.status,
        )

    def terms(self) -> ChildTerms:
        kind = AgentType(
            self.type,
            "",
            self.ceiling,
            tuple(self.tools) if self.tools is not None else None,
            self.preamble,
            self.type_model,
        )
        return ChildTerms(
            agent_id=self.agent_id,
            agent_type=kind,
            description=self.description,
            mode=self.mode,
            deny_tools=frozenset(self.deny_tools),
            deny_servers=frozenset(self.deny_servers),
            model=self.model,
            isolation=self.isolation,
        )
