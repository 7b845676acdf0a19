"""Step 7 of DESIGN.md §4, resolution: what becomes of an `ask` or a `classify`.

An ask is answered by a person at a TTY (`resolve_user`) or, headless, blocked unless
`--allow-untrusted-tools` covers the call (`resolve_ask`); the auto reviewer's answer folds into a
`classify` (`resolve_review`). Also the "don't ask again" key (`session_allow_key`) and the message
that tells a headless run how to let a blocked call through (`headless_message`). Pure: no I/O.
"""

from __future__ import annotations

import posixpath
from dataclasses import replace

from mermaid_cli.config.sections.safety import SafetySettings
from mermaid_cli.policy.actions import READ_TOOLS, ActionRequest, PolicyOutcome
from mermaid_cli.policy.shell.classifier import ShellClassification

#: calls `--allow-untrusted-tools` lets through a headless ask
UNTRUSTED_TOOL_CATEGORIES = frozenset({"web", "mcp", "subagent", "computer"})


def resolve_ask(
    outcome: PolicyOutcome,
    request: ActionRequest,
    *,
    interactive: bool,
    allow_untrusted: bool,
    policy: SafetySettings | None = None,
) -> PolicyOutcome:
    """Step 7 for an `ask`: a person answers at a TTY; headless, it is blocked unless
    `--allow-untrusted-tools` covers the call."""
    if interactive:
        return outcome
    if allow_untrusted and untrusted_kind(request):
        return replace(
            outcome, verdict="allow", by="headless", reason="allowed headless by --allow-untrusted-tools"
        )
    return _headless_block(outcome, headless_message(request, outcome, policy))


def resolve_review(
    outcome: PolicyOutcome,
    request: ActionRequest,
    *,
    allow: bool,
    reason: str,
    interactive: bool,
) -> PolicyOutcome:
    """Fold the auto reviewer's answer into a `classify` outcome. An escalation goes to a person at
    a TTY, and is a block headless (even with --allow-untrusted-tools: the reviewer objected)."""
    if allow:
        return replace(outcome, verdict="allow", by="classifier", reason=reason or "auto reviewer: ALLOW")
    if interactive:
        return replace(outcome, verdict="ask", by="classifier", reason=f"auto reviewer escalated: {reason}")
    return _headless_block(
        outcome,
        f"{request.label} blocked by the auto-mode safety review: {reason}. Nobody can approve it in a "
        "headless run; to let it run, add a [[safety.overrides]] allow rule for it or use --safety full_access.",
    )


def _headless_block(outcome: PolicyOutcome, reason: str) -> PolicyOutcome:
    """An ask nobody can answer: denied as a block (the run ends exit 3), with no checkpoint."""
    return replace(outcome, verdict="deny", by="headless", blocked=True, checkpoint=False, reason=reason)


def session_allow_key(request: ActionRequest, shell: ShellClassification | None) -> str | None:
    """The "don't ask again" key: the program of a simple shell command, the directory of an
    outside path, the host of a web call, the tool otherwise. MCP calls, commands with
    substitutions or several segments, and commands run outside the project are never remembered."""
    if request.category == "mcp":
        return None
    if request.command is not None:
        if shell is None or not shell.simple or not shell.programs or request.cwd_outside_project:
            return None
        return f"{request.tool}:program:{shell.programs[0]}"
    if request.host:
        return f"{request.tool}:host:{request.host}"
    outside = [p.path for p in request.paths if p.outside_project]
    if outside:
        dirs = {posixpath.dirname(posixpath.normpath(p)) for p in outside}
        return f"{request.tool}:dir:{dirs.pop()}" if len(dirs) == 1 else None
    return f"{request.tool}:project"


def resolve_user(outcome: PolicyOutcome, *, approved: bool) -> PolicyOutcome:
    """A person's answer to an `ask` (1/2 = approved, 3/Esc = not). A refusal is the operator's
    intent, not a block: the model is told and goes on."""
    if approved:
        return replace(outcome, verdict="allow", by="user", reason="approved by the user")
    return replace(outcome, verdict="deny", by="user", reason="denied by the user", checkpoint=False)


def untrusted_kind(request: ActionRequest) -> bool:
    """Web, MCP, subagent, computer-input and outside-read calls: what --allow-untrusted-tools lets through."""
    if request.category in UNTRUSTED_TOOL_CATEGORIES:
        return True
    if request.category == "read" or (
        request.category == "external_directory" and request.tool in READ_TOOLS
    ):
        return True
    return False


def headless_message(
    request: ActionRequest, outcome: PolicyOutcome, policy: SafetySettings | None = None
) -> str:
    mode = policy.mode if policy is not None else None
    hint = _rule_hint(request, outcome)
    if mode == "full_access":  # only a floor can ask here: lowering the mode again would not help
        fix = 'To let it run: set [safety] external_writes or system_installs = "allow",'
    else:
        fix = (
            "To let it run: use --safety auto or --safety full_access"
            + (f" (now '{mode}')" if mode else "")
            + ","
        )
    parts = [
        f"{request.label} requires approval ({outcome.reason}), but this is a headless run with nobody to ask.",
        fix,
        f'add a [[safety.overrides]] rule with decision = "allow" ({hint}),',
    ]
    if untrusted_kind(request):
        parts.append("or pass --allow-untrusted-tools.")
    else:
        parts[-1] = parts[-1].rstrip(",") + "."
    if mode == "read_only" and request.category == "web":
        parts.append("In read_only, [safety] allow_readonly_web = true permits unattended public-web reads.")
    return " ".join(parts)


def _rule_hint(request: ActionRequest, outcome: PolicyOutcome) -> str:
    if request.command is not None and outcome.shell is not None and outcome.shell.programs:
        return f'tool = "{request.tool}", pattern = "{outcome.shell.programs[0]}"'
    if request.host:
        return f'tool = "{request.tool}", pattern = "{request.host}"'
    return f'tool = "{request.tool}"'
