"""What the policy judges and what it answers: a proposed action (`ActionRequest`, its `PathRef`s)
and the verdict on it (`PolicyOutcome`), plus the hook opinion the engine reads.

Plain frozen values, no logic beyond their own properties: `policy.requests` builds requests, the
engine (`policy.engine`) and the resolution steps (`policy.resolution`) produce outcomes, the gate
(`policy.gate`) carries them to the tool call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from mermaid_cli.config.sections.safety import Category, Override
from mermaid_cli.core.types import Decision
from mermaid_cli.policy.shell.classifier import Risk, ShellClassification

Verdict = Literal["allow", "deny", "ask", "classify"]
By = Literal["mode", "rule", "hook", "classifier", "user", "headless", "hard_deny", "network"]

READ_TOOLS = frozenset({"read_file", "glob", "grep"})  # the built-in tools that only read


@dataclass(frozen=True)
class PathRef:
    """A path an action touches, and whether it lies outside the project."""

    path: str
    outside_project: bool = False


@dataclass(frozen=True)
class ActionRequest:
    """What the model wants to do, as the gate sees it."""

    tool: str
    category: Category
    command: str | None = None
    paths: tuple[PathRef, ...] = ()
    mcp_read_only_hint: bool = False
    host: str | None = None
    summary: str = ""
    #: a shell command whose working directory is outside the project
    cwd_outside_project: bool = False

    def __post_init__(self) -> None:
        refs = tuple(
            p if isinstance(p, PathRef) else PathRef(*p) if isinstance(p, tuple) else PathRef(str(p))
            for p in self.paths
        )
        object.__setattr__(self, "paths", refs)

    @property
    def outside(self) -> bool:
        return self.cwd_outside_project or any(p.outside_project for p in self.paths)

    @property
    def label(self) -> str:
        return self.summary or self.command or (self.paths[0].path if self.paths else "") or self.tool


class HookOpinion(Protocol):
    """What the engine needs from `policy.hooks.HookOutcome`."""

    @property
    def decision(self) -> str | None: ...

    @property
    def reason(self) -> str | None: ...


@dataclass(frozen=True)
class PolicyOutcome:
    """The policy's verdict on one action, who gave it and why."""

    verdict: Verdict
    by: By
    reason: str
    risk: Risk
    rule: Override | None = None
    #: an ask nobody could answer (headless): the run ends with exit 3. An operator deny (mode,
    #: rule, hook, hard deny) is not a block: the model is told and goes on.
    blocked: bool = False
    hard_deny_rule: str | None = None
    #: take a checkpoint before running (a mutation with `checkpoint_on_mutation`)
    checkpoint: bool = False
    #: what "yes, don't ask again (this session)" would remember (None: never remembered);
    #: pass remembered keys back as `evaluate(..., session_allow=...)`
    allow_key: str | None = None
    shell: ShellClassification | None = field(default=None, compare=False, repr=False)

    @property
    def allowed(self) -> bool:
        return self.verdict == "allow"

    def decision(self) -> Decision:
        """For `tool_finished.decision`; `classify` must be resolved first (it shows as ask)."""
        verdict: Any = "ask" if self.verdict == "classify" else self.verdict
        return Decision(verdict=verdict, by=self.by, reason=self.reason, risk=self.risk)
