"""What the shell classifier answers: a `ShellClassification` of the whole command, with one
`Segment` per simple command (its argv, program, risk and why). Plain frozen values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mermaid_cli.policy.shell.risk import Risk


@dataclass(frozen=True)
class Segment:
    """One simple command: its argv (words after quote removal; substitutions left as written),
    its own risk (not counting nested substitutions, which are segments of their own) and why."""

    argv: list[str]
    risk: Risk
    program: str | None = None
    depth: int = 0
    reason: str = ""


@dataclass(frozen=True)
class ShellClassification:
    """What a shell command line does, as the policy judges it."""

    risk: Risk
    hard_deny_rule: str | None
    segments: list[Segment] = field(default_factory=list)
    programs: list[str] = field(default_factory=list)
    #: a single simple command: no `;`/`|`/`&&`, no substitution, heredoc, subshell, assignment
    #: prefix or file redirect. Only such a command can match an anchored `allow` rule.
    simple: bool = False
    malformed: bool = False
    reason: str = ""
    #: the hard deny was found only by the lenient second reading (comments, escapes, bad quoting)
    lenient: bool = False
