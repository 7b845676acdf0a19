"""The policy engine: one pure function from a proposed action to a verdict (DESIGN.md §4).

No I/O, no prompts, no model calls: the caller runs hooks, the auto reviewer and the TTY prompt and
feeds their answers back. This module is the pipeline and steps 3-6; steps 1-2 live in
`policy.screening`, the override matching in `policy.overrides`, step 7 in `policy.resolution`,
the values judged and returned in `policy.actions`. The steps run in the order of DESIGN.md §4,
which is the security property:

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
`policy.resolution.resolve_review(...)`, which turns an escalation into an `ask` (TTY) or a block (headless).

Wiring, per call: `request = requests.request_for_call(...)`; `before_hooks(request, policy)`
(a deny there makes the hooks pointless); `hook = await hooks.run_before_tool_use(...)` (on an
`updatedInput`, rebuild the request and start over); `outcome = evaluate(..., hook=hook,
session_allow=remembered)`; then `classify` → reviewer → `resolve_review`; `ask` → TTY prompt
(answer 2 remembers `outcome.allow_key`); `deny` with `blocked` → exit 3 at the end of the run.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from pathlib import Path

from mermaid_cli.config.sections.safety import Override, SafetySettings
from mermaid_cli.policy.actions import (
    ActionRequest,
    By,
    HookOpinion,
    PolicyOutcome,
    Verdict,
)
from mermaid_cli.policy.overrides import rule_matches
from mermaid_cli.policy.resolution import resolve_ask, session_allow_key
from mermaid_cli.policy.screening import screen
from mermaid_cli.policy.shell.classifier import (
    RANK,
    Risk,
    ShellClassification,
)

_VERDICT_SEVERITY = {"allow": 0, "classify": 1, "ask": 2, "deny": 3}
_FLOOR_VERDICT: dict[str, Verdict] = {"allow": "allow", "auto": "classify", "ask": "ask", "deny": "deny"}


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
    early, risk, shell = screen(request, policy, project_root=project_root, home=home)  # 1-2
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
    rule = next((r for r in policy.overrides if rule_matches(r, request, call.shell)), None)
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
    floors = (
        (
            call.request.category == "mcp" and not call.request.mcp_read_only_hint,
            policy.external_writes,
            "external-writes policy blocks write-shaped MCP tools",
            f"external_writes = {policy.external_writes}: write-shaped MCP tool",
        ),
        (
            call.risk == "system_mutation",
            policy.system_installs,
            "system-installs policy blocks machine-scoped installs",
            f"system_installs = {policy.system_installs}: machine-scoped install",
        ),
    )
    for applies, level, deny_reason, raise_reason in floors:
        floor = _FLOOR_VERDICT[level]
        if applies and _VERDICT_SEVERITY[floor] > _VERDICT_SEVERITY[verdict]:
            verdict, reason = floor, deny_reason if floor == "deny" else raise_reason
    return verdict, reason


def _resolve(call: _Call, outcome: PolicyOutcome) -> PolicyOutcome:
    """Step 7: a hook's ask raises an allow or classify to ask; an ask is answered at a TTY or,
    headless, blocked unless --allow-untrusted-tools covers the call. Denies pass unchanged."""
    if call.hook_asks and outcome.verdict in ("allow", "classify"):
        outcome = replace(
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


def _sandboxed_shell(request: ActionRequest, policy: SafetySettings) -> bool:
    """Issue 14 (DESIGN §4.1): with the kernel sandbox in force, a read_only shell command the
    classifier does not call read-only runs inside the read-only sandbox instead of being denied
    (hard denies were applied earlier, in `screening.screen`). Background processes stay denied."""
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
