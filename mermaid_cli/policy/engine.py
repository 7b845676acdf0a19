"""The policy engine: one pure function from a proposed action to a verdict (DESIGN.md §4).

No I/O, no prompts, no model calls: the caller runs hooks, the auto reviewer and the TTY prompt and
feeds their answers back. The steps run in the order of DESIGN.md §4, which is the security
property:

1. network kill switch (`[safety] network = "deny"`): web tools are refused; so is a shell command
   classified `network`;
2. risk classification; a hard-deny shape is denied and nothing later can change that;
3. hooks: the caller runs `before_tool_use` hooks (`policy.hooks.run_before_tool_use`) and passes
   their combined opinion as `hook=`. A hook `deny` denies; a hook `ask` raises the final verdict to
   at least `ask`; a hook `allow` is recorded but cannot skip the rules or the mode (hooks only
   tighten). An `updatedInput` is the caller's business: build a new request and evaluate again;
4. the first matching `[[safety.overrides]]` rule decides (an `allow` pattern for a shell command
   is anchored to the program of a single simple command). `read_only` is a ceiling a rule cannot
   lift: in `read_only` an allow rule only allows what is read-only anyway;
5. memory and session tools, in-project reads: allowed without asking (memory writes denied in
   `read_only`);
6. the mode matrix; then the floors (`external_writes`, `system_installs`) that even
   `full_access` keeps;
7. resolution: `ask` with no TTY is blocked (`blocked=True`, the run ends exit 3) unless
   `allow_untrusted` and the call is web, MCP, a subagent, the computer's input or an outside read.

`classify` means "ask the auto reviewer": the caller calls `policy.reviewer.review` and then
`resolve_review(...)`, which turns an escalation into an `ask` (TTY) or a block (headless).

Wiring, per call: `request = requests.request_for_call(...)`; `before_hooks(request, policy)`
(a deny there makes the hooks pointless); `hook = await hooks.run_before_tool_use(...)` (on an
`updatedInput`, rebuild the request and start over); `outcome = evaluate(..., hook=hook,
session_allow=remembered)`; then `classify` → reviewer → `resolve_review`; `ask` → TTY prompt
(answer 2 remembers `outcome.allow_key`); `deny` with `blocked` → exit 3 at the end of the run.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from mermaid_cli.config.sections.safety import Category, Override, SafetySettings
from mermaid_cli.core.types import Decision
from mermaid_cli.policy.shell.classifier import (
    RANK,
    Risk,
    ShellClassification,
    classify_command,
    sensitive_write_rule,
    worst,
)

Verdict = Literal["allow", "deny", "ask", "classify"]
By = Literal["mode", "rule", "hook", "classifier", "user", "headless", "hard_deny", "network"]

READ_TOOLS = frozenset({"read_file", "glob", "grep"})  # the built-in tools that only read
#: calls `--allow-untrusted-tools` lets through a headless ask
UNTRUSTED_TOOL_CATEGORIES = frozenset({"web", "mcp", "subagent", "computer"})

_CATEGORY_RISK: dict[str, Risk] = {
    "read": "read_only",
    "edit": "file_mutation",
    "shell": "shell_mutation",
    "process": "process",
    "web": "network",
    "mcp": "external_access",
    "subagent": "process",
    "memory": "low_mutation",
    "session": "read_only",
    "external_directory": "external_access",
    #: mouse and keyboard input of the `computer` tool (its screenshots are category `read`)
    "computer": "external_access",
}

_VERDICT_SEVERITY = {"allow": 0, "classify": 1, "ask": 2, "deny": 3}
_FLOOR_VERDICT: dict[str, Verdict] = {"allow": "allow", "auto": "classify", "ask": "ask", "deny": "deny"}


@dataclass(frozen=True)
class PathRef:
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


def classify_request(
    request: ActionRequest, *, project_root: Path | None = None, home: Path | None = None
) -> tuple[Risk, str | None, ShellClassification | None]:
    """(risk, hard-deny rule or None, shell classification for shell commands)."""
    shell = None
    risk: Risk = _CATEGORY_RISK.get(request.category, "shell_mutation")
    hard: str | None = None
    if request.command is not None and request.category in ("shell", "process", "external_directory"):
        shell = classify_command(request.command, project_root=project_root, home=home)
        risk, hard = (
            (shell.risk if request.category == "shell" else worst(risk, shell.risk)),
            shell.hard_deny_rule,
        )
    if request.outside and request.category not in (
        "web",
        "mcp",
        "subagent",
        "memory",
        "session",
        "computer",
    ):
        risk = worst(risk, "external_access")
    if request.category in ("edit", "external_directory") and hard is None and request.tool not in READ_TOOLS:
        for ref in request.paths:
            path = ref.path
            if not posixpath.isabs(path) and project_root is not None:
                path = posixpath.join(str(project_root), path)
            if posixpath.isabs(path):
                hard = sensitive_write_rule(path, str(home) if home is not None else None)
                if hard:
                    break
    if hard is not None:
        risk = "destructive"
    return risk, hard, shell


def evaluate(
    request: ActionRequest,
    policy: SafetySettings,
    *,
    interactive: bool,
    allow_untrusted: bool,
    untrusted_content: bool = False,
    hook: HookOpinion | None = None,
    project_root: Path | None = None,
    home: Path | None = None,
    session_allow: Collection[str] = (),
) -> PolicyOutcome:
    """Decide one call. `untrusted_content`: the conversation holds content from an untrusted
    source (web pages, MCP results, issue text); `full_access` then sends anything beyond a file
    edit to the reviewer instead of running it unvetted.

    The steps run in DESIGN.md §4 order; each returns an outcome or None (next step)."""
    early, risk, shell = _early(request, policy, project_root=project_root, home=home)  # 1-2
    if early is not None:
        return early
    call = _Call(
        request=request,
        policy=policy,
        risk=risk,
        shell=shell,
        interactive=interactive,
        allow_untrusted=allow_untrusted or policy.allow_untrusted_headless_tools,
        untrusted_content=untrusted_content,
        hook_asks=hook is not None and hook.decision == "ask",
        session_allow=session_allow,
    )
    outcome = (
        _hook_denies(call, hook)  # 3
        or _first_override(call)  # 4
        or _never_asks(call)  # 5a: memory, session, in-project reads
        or _by_mode(call)  # 5b-6: the mode matrix, then the floors
    )
    return _resolve(call, outcome)  # 7


@dataclass(frozen=True)
class _Call:
    """One call being decided: the request, the policy and what steps 1-2 found."""

    request: ActionRequest
    policy: SafetySettings
    risk: Risk
    shell: ShellClassification | None
    interactive: bool
    allow_untrusted: bool
    untrusted_content: bool
    #: a `before_tool_use` hook said ask: applied at resolution, after the rules and the mode
    hook_asks: bool
    session_allow: Collection[str]

    @property
    def allow_key(self) -> str | None:
        return session_allow_key(self.request, self.shell)

    def out(self, verdict: Verdict, by: By, reason: str, rule: Override | None = None) -> PolicyOutcome:
        checkpoint = (
            self.policy.checkpoint_on_mutation
            and self.risk != "read_only"
            and self.request.category not in ("memory", "session")
        )
        if rule is not None and rule.checkpoint is not None:
            checkpoint = rule.checkpoint
        return PolicyOutcome(
            verdict,
            by,
            reason,
            self.risk,
            rule=rule,
            checkpoint=checkpoint and verdict != "deny",
            allow_key=self.allow_key,
            shell=self.shell,
        )


def _hook_denies(call: _Call, hook: HookOpinion | None) -> PolicyOutcome | None:
    """Step 3: a hook deny wins (an ask waits for resolution; an allow cannot skip anything)."""
    if hook is not None and hook.decision == "deny":
        return call.out("deny", "hook", f"Denied by hook: {hook.reason or 'no reason given'}")
    return None


def _first_override(call: _Call) -> PolicyOutcome | None:
    """Step 4: the first matching `[[safety.overrides]]` rule decides, under the read_only ceiling."""
    request, policy, risk = call.request, call.policy, call.risk
    rule = next((r for r in policy.overrides if _rule_matches(r, request, call.shell)), None)
    if rule is None:
        return None
    if rule.decision == "deny":
        return call.out("deny", "rule", rule.reason or "blocked by policy override", rule)
    if (
        policy.mode == "read_only"
        and not _read_only_permits(request, risk)
        and not _sandboxed_shell(request, policy)
    ):
        return call.out("deny", "mode", _read_only_reason(request, risk) + " (a rule cannot lift read_only)")
    if rule.decision == "ask":
        return call.out("ask", "rule", rule.reason or "policy override asks for approval", rule)
    if (
        call.untrusted_content
        and policy.mode == "auto"
        and not rule.trust_after_untrusted
        and (RANK[risk] >= RANK["shell_mutation"] or request.category in ("web", "mcp"))
    ):
        # Text from an untrusted source may be steering the model: the reviewer vets it.
        reason = "untrusted content is in the conversation, so the reviewer vets this despite the allow rule"
        return call.out("classify", "rule", reason, rule)
    return call.out("allow", "rule", rule.reason or "allowed by policy override", rule)


def _never_asks(call: _Call) -> PolicyOutcome | None:
    """Step 5a: memory and session tools and in-project reads run without asking (memory writes
    are denied in read_only)."""
    cat = call.request.category
    if cat == "memory":
        if call.policy.mode == "read_only":
            return call.out("deny", "mode", "read-only safety mode blocks memory writes")
        return call.out("allow", "mode", "memory")
    if cat == "session" or (cat == "read" and not call.request.outside):
        return call.out("allow", "mode", "in-project read")
    return None


def _by_mode(call: _Call) -> PolicyOutcome:
    """Steps 5b-6: the mode matrix, raised by the floors; an ask or classify the user already
    answered "don't ask again" for is allowed."""
    verdict, reason = _MODE_MATRIX[call.policy.mode](call)
    if call.policy.mode != "read_only":
        verdict, reason = _floors(call, verdict, reason)
    if verdict == "deny":
        return call.out("deny", "mode", reason)
    allow_key = call.allow_key
    if verdict in ("ask", "classify") and allow_key is not None and allow_key in call.session_allow:
        return call.out("allow", "user", "approved earlier in this session (don't ask again)")
    return call.out(verdict, "mode", reason)


def _read_only_mode(call: _Call) -> tuple[Verdict, str]:
    cat = call.request.category
    if cat == "web":
        if call.policy.allow_readonly_web:
            return "allow", "read_only with allow_readonly_web"
        return "ask", "read-only safety mode asks before web access"
    if cat == "subagent":
        return "allow", "subagent inherits read_only"
    if call.risk == "read_only":
        return "allow", "read-only action"
    if _sandboxed_shell(call.request, call.policy):  # DESIGN §4.1: the kernel refuses the writes instead
        return "allow", "read_only: runs inside the read-only kernel sandbox"
    return "deny", _read_only_reason(call.request, call.risk)


def _ask_mode(call: _Call) -> tuple[Verdict, str]:
    return "ask", f"safety mode 'ask' asks before every {call.risk} action"


def _auto_mode(call: _Call) -> tuple[Verdict, str]:
    if RANK[call.risk] <= RANK["file_mutation"]:
        return "allow", f"auto allows {call.risk}"
    return "classify", f"auto sends {call.risk} to the reviewer"


def _full_access_mode(call: _Call) -> tuple[Verdict, str]:
    if call.untrusted_content and RANK[call.risk] > RANK["file_mutation"]:
        return "classify", "untrusted content in context: the reviewer vets this"
    return "allow", "full_access"


_MODE_MATRIX: dict[str, Callable[[_Call], tuple[Verdict, str]]] = {
    "read_only": _read_only_mode,
    "ask": _ask_mode,
    "auto": _auto_mode,
    "full_access": _full_access_mode,
}


def _floors(call: _Call, verdict: Verdict, reason: str) -> tuple[Verdict, str]:
    """Step 6: what even full_access keeps: write-shaped MCP tools (`external_writes`) and
    machine-scoped installs (`system_installs`) get at least the configured verdict."""
    policy = call.policy
    if call.request.category == "mcp" and not call.request.mcp_read_only_hint:
        floor = _FLOOR_VERDICT[policy.external_writes]
        if _VERDICT_SEVERITY[floor] > _VERDICT_SEVERITY[verdict]:
            verdict = floor
            reason = (
                "external-writes policy blocks write-shaped MCP tools"
                if floor == "deny"
                else f"external_writes = {policy.external_writes}: write-shaped MCP tool"
            )
    if call.risk == "system_mutation":
        floor = _FLOOR_VERDICT[policy.system_installs]
        if _VERDICT_SEVERITY[floor] > _VERDICT_SEVERITY[verdict]:
            verdict = floor
            reason = (
                "system-installs policy blocks machine-scoped installs"
                if floor == "deny"
                else f"system_installs = {policy.system_installs}: machine-scoped install"
            )
    return verdict, reason


def _resolve(call: _Call, outcome: PolicyOutcome) -> PolicyOutcome:
    """Step 7: a hook's ask raises an allow or classify to ask; an ask is answered at a TTY or,
    headless, blocked unless --allow-untrusted-tools covers the call. Denies pass unchanged."""
    if call.hook_asks and outcome.verdict in ("allow", "classify"):
        outcome = _replace(
            outcome, verdict="ask", by="hook", reason="a before_tool_use hook asks for approval"
        )
    if outcome.verdict != "ask":
        return outcome
    return resolve_ask(
        outcome,
        call.request,
        interactive=call.interactive,
        allow_untrusted=call.allow_untrusted,
        policy=call.policy,
    )


def before_hooks(
    request: ActionRequest,
    policy: SafetySettings,
    *,
    project_root: Path | None = None,
    home: Path | None = None,
) -> PolicyOutcome | None:
    """Steps 1-2 alone: the deny (network kill switch or hard deny) that makes running the hooks
    pointless, or None. `evaluate` repeats them, so calling this first is optional."""
    return _early(request, policy, project_root=project_root, home=home)[0]


def _early(
    request: ActionRequest, policy: SafetySettings, *, project_root: Path | None, home: Path | None
) -> tuple[PolicyOutcome | None, Risk, ShellClassification | None]:
    network_off = 'blocked because network access is disabled (safety.network = "deny" / --no-network)'
    if policy.network == "deny" and request.category == "web":
        return PolicyOutcome("deny", "network", f"{request.tool} {network_off}", "network"), "network", None
    risk, hard, shell = classify_request(request, project_root=project_root, home=home)
    if hard is not None:
        outcome = PolicyOutcome("deny", "hard_deny", hard, "destructive", hard_deny_rule=hard, shell=shell)
        return outcome, risk, shell
    if policy.network == "deny" and shell is not None and risk == "network":
        return (
            PolicyOutcome("deny", "network", f"{request.label} {network_off}", risk, shell=shell),
            risk,
            shell,
        )
    if policy.filesystem == "project" and _writes_outside(request, risk):
        reason = (
            f'{request.label} would write outside the project, which safety.filesystem = "project" '
            "(--confine-fs) refuses"
        )
        return PolicyOutcome("deny", "mode", reason, risk, shell=shell), risk, shell
    return None, risk, shell


def _writes_outside(request: ActionRequest, risk: Risk) -> bool:
    """A file mutation of an outside path, or a shell command classified as writing outside."""
    if request.category == "edit":
        return request.outside
    if request.category in ("shell", "process"):
        return risk == "external_access" or request.cwd_outside_project
    return False


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
        return _replace(
            outcome, verdict="allow", by="headless", reason="allowed headless by --allow-untrusted-tools"
        )
    return _replace(
        outcome,
        verdict="deny",
        by="headless",
        blocked=True,
        checkpoint=False,
        reason=headless_message(request, outcome, policy),
    )


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
        return _replace(outcome, verdict="allow", by="classifier", reason=reason or "auto reviewer: ALLOW")
    if interactive:
        return _replace(outcome, verdict="ask", by="classifier", reason=f"auto reviewer escalated: {reason}")
    return _replace(
        outcome,
        verdict="deny",
        by="headless",
        blocked=True,
        checkpoint=False,
        reason=(
            f"{request.label} blocked by the auto-mode safety review: {reason}. Nobody can approve it in a "
            "headless run; to let it run, add a [[safety.overrides]] allow rule for it or use --safety full_access."
        ),
    )


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
        return _replace(outcome, verdict="allow", by="user", reason="approved by the user")
    return _replace(outcome, verdict="deny", by="user", reason="denied by the user", checkpoint=False)


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


def _sandboxed_shell(request: ActionRequest, policy: SafetySettings) -> bool:
    """Issue 14 (DESIGN §4.1): with the kernel sandbox in force, a read_only shell command the
    classifier does not call read-only runs inside the read-only sandbox instead of being denied
    (hard denies were applied earlier, in `_early`). Background processes stay denied."""
    return policy.sandboxed and request.category == "shell"


def _read_only_permits(request: ActionRequest, risk: Risk) -> bool:
    return risk == "read_only" or request.category in ("web", "subagent")


def _read_only_reason(request: ActionRequest, risk: Risk) -> str:
    """The deny message of read_only (steps 4 and 6): what the mode blocks, in the call's terms."""
    if request.category == "computer":
        return "read-only safety mode blocks mouse and keyboard input (screenshots still work)"
    what = {
        "network": "network access",
        "process": "running programs",
        "external_access": "external side effects",
        "system_mutation": "machine-scoped changes",
    }.get(risk, "mutations and control actions")
    return f"read-only safety mode blocks {what}"


def _rule_matches(rule: Override, request: ActionRequest, shell: ShellClassification | None) -> bool:
    if rule.tool is not None and not fnmatch.fnmatchcase(request.tool, rule.tool):
        return False
    if rule.category is not None:
        cats = {request.category}
        if request.outside:
            cats.add("external_directory")
        if rule.category not in cats:
            return False
    if rule.pattern is None:
        return True
    pattern = rule.pattern
    if rule.decision == "allow":
        if request.command is not None:
            return _anchored(pattern, shell)
        if request.paths:
            want = pattern.rstrip("/") or "/"
            return all((p.path.rstrip("/") or "/") == want for p in request.paths)
        if request.host is not None:
            return request.host == pattern
        return bool(request.summary) and request.summary == pattern
    subjects = (
        [request.command]
        if request.command is not None
        else [p.path for p in request.paths] or ([request.host] if request.host else []) or [request.summary]
    )
    return any(pattern in s for s in subjects if s)


def _anchored(pattern: str, shell: ShellClassification | None) -> bool:
    """`allow git` matches `git …` only when it is one simple command: no `;`, `|`, `&&`,
    substitution, heredoc, subshell, assignment prefix or file redirect. A multi-word pattern
    (`npm test`) must equal the first words."""
    if shell is None or not shell.simple or not shell.segments:
        return False
    argv = shell.segments[0].argv
    want = pattern.split()
    if not want or len(argv) < len(want):
        return False
    if "/" in argv[0] and not re.match(r"^/(?:usr/(?:local/)?)?s?bin/[^/]+$", argv[0]):
        return False  # `./git` is not git
    program = argv[0].rsplit("/", 1)[-1]
    return program == want[0] and argv[1 : len(want)] == want[1:]


def _replace(outcome: PolicyOutcome, **changes: Any) -> PolicyOutcome:
    from dataclasses import replace

    return replace(outcome, **changes)
