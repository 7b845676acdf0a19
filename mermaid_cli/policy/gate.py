"""The one gate every tool call passes (DESIGN.md §4), wiring the pure engine to its I/O: hooks, the
auto reviewer, a person at a TTY, and the protocol events. Implements the agent's `Gate`.

Order per call: request -> network kill switch / hard deny -> `before_tool_use` hooks (an
`updatedInput` goes through the gate again) -> rules -> mode -> floors -> reviewer -> person or
headless block. Whatever decides, the decision is returned to the loop, which records it on
`tool_finished.decision` and, unless it is a plain mode allow, as `approval_decided`. Who answers
an ask is an `Approver` (`policy.approvers`); batched tools share one decision per model message
(`policy.batches`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from mermaid_cli.config.loader import Settings
from mermaid_cli.core import events as ev
from mermaid_cli.core.types import Decision, GateResult, ToolCallBlock, Usage
from mermaid_cli.policy.approvers import Approver
from mermaid_cli.policy.batches import MessageBatches

if TYPE_CHECKING:  # the engine and the shell classifier load at the first tool call, not at start
    from mermaid_cli.policy.actions import ActionRequest, PolicyOutcome
    from mermaid_cli.policy.requests import FileTarget

MAX_HOOK_ROUNDS = 3


@dataclass
class PolicyGate:
    """The gate every tool call passes before it runs (DESIGN.md §4)."""

    settings: Settings  # the run's settings (safety, web, hooks)
    project_root: Path
    emit: Callable[[Any], None]
    interactive: bool = False
    allow_untrusted: bool = False
    reviewer: Any = None  # a Provider for the auto reviewer; None escalates every review
    user_request: Callable[[], str] = lambda: ""
    hooks: list[Any] = field(default_factory=list)
    redact: Callable[[str], str] = lambda s: s
    approver: Approver | None = None
    untrusted_content: Callable[[], bool] = lambda: False
    on_usage: Callable[[Usage], None] = lambda _usage: None
    note: Callable[[str], None] = lambda _line: None
    session_allow: set[str] = field(default_factory=set)
    #: (kind, resolved outside path) a decision allowed, kind "read" or "write"; the file tools'
    #: external-access check consults it
    allowed_outside: set[tuple[str, str]] = field(default_factory=set)
    _prompt_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _batches: MessageBatches = field(default_factory=MessageBatches)
    #: the targets `targets_for` just resolved for a call's event (with that call's arguments
    #: object, the root and the raw targets), taken once by that call's own check: the decision
    #: judges exactly the files the event showed, resolved once
    _shown: tuple[object, str, tuple[tuple[str, str], ...], list[FileTarget]] | None = None
    #: the protected directories and the sandbox's unreadable paths (`screening.protected_dirs`,
    #: `screening.secret_list`), found at the first file call
    _secret_paths: tuple[str, ...] | None = None
    _protected_dirs: tuple[str, ...] | None = None
    #: whether untrusted content was in the conversation when the current message was written
    _message_untrusted: bool | None = None

    async def check(self, call_id: str, tool: Any, args: Any, call: ToolCallBlock) -> GateResult:
        """The agent's `Gate` protocol (the loop reads the same fields from its own GateResult).

        A file tool's targets are resolved first and each (path, operation) is judged on its own;
        the worst verdict decides the call (a patch is judged file by file)."""
        from mermaid_cli.policy.screening import before_hooks
        from mermaid_cli.security.paths import PathRefused

        policy = self.settings.safety
        root = self._root()  # once per call: every part of this decision judges the same root
        arguments = _as_dict(args, call)
        new_args = None
        hook = None
        contexts: list[str] = []  # every round's additionalContext reaches the model, in order
        for _round in range(MAX_HOOK_ROUNDS + 1):
            try:
                request, targets = self._request(tool, arguments, root, shown_for=call.arguments)
            except PathRefused as exc:
                return _bad_input(tool.name, str(exc))
            refused = self._path_refusal(targets)
            if refused is not None:
                return self._deny(refused, request)
            for part in _per_target(request, targets):
                early = before_hooks(part, policy, project_root=root)
                if early is not None:
                    return self._deny(early, request)
            if not self.hooks or _round == MAX_HOOK_ROUNDS:
                break  # the last rewrite is checked above but not offered to the hooks again
            from mermaid_cli.policy.hooks import run_before_tool_use

            hook = await run_before_tool_use(
                self.hooks,
                {
                    "tool_name": tool.name,
                    "tool_input": arguments,
                    "call_id": call_id,
                    "cwd": str(self.project_root),
                },
            )
            for warning in hook.warnings:
                self.note(f"hook: {warning}")
            if hook.additional_context:
                contexts.append(hook.additional_context)
            if hook.decision == "deny" or hook.updated_input is None or hook.updated_input == arguments:
                break
            try:  # the rewritten call must still fit the tool, and goes through the gate again
                new_args = tool.Args.model_validate(hook.updated_input)
            except Exception as exc:  # noqa: BLE001
                return GateResult(
                    decision=Decision(
                        verdict="deny",
                        by="hook",
                        reason=f"hook rewrote the call into invalid arguments: {exc}",
                    ),
                    message=f"{tool.name} was not run: a hook rewrote it into invalid arguments",
                )
            arguments = hook.updated_input
        batch = self._batches.batch_for(tool, arguments, call, hook)
        if batch is not None:  # one decision for all of this tool's gated calls in the message
            from dataclasses import replace

            request = replace(request, summary=batch.summary)
            async with batch.lock:
                if batch.outcome is None:
                    batch.outcome = await self._decide(call_id, tool, arguments, request, targets, hook, root)
            outcome = batch.outcome
        else:
            outcome = await self._decide(call_id, tool, arguments, request, targets, hook, root)
        if outcome.verdict == "allow":
            self._grant(request, targets)
            context = "\n\n".join(contexts) or None
            return GateResult(decision=outcome.decision(), args=new_args, context=context)
        return self._deny(outcome, request)

    async def _decide(
        self,
        call_id: str,
        tool: Any,
        arguments: dict[str, Any],
        request: ActionRequest,
        targets: list[FileTarget],
        hook: Any,
        root: Path,
    ) -> PolicyOutcome:
        """Rules, mode and floors per target (the worst decides), then the reviewer or a person:
        the outcome for `request`."""
        from mermaid_cli.policy.engine import evaluate

        policy = self.settings.safety
        outcome: PolicyOutcome | None = None
        worst_op = "call"
        parts = _per_target(request, targets)
        for n, part in enumerate(parts):
            op = targets[n].operation if targets else "call"
            one = evaluate(
                part,
                policy,
                interactive=self.interactive,
                allow_untrusted=self.allow_untrusted,
                untrusted_content=self._untrusted(),
                hook=hook,
                project_root=root,
                session_allow=_granted_for(self.session_allow, op),
            )
            if outcome is None or _severity(one) > _severity(outcome):
                outcome, worst_op = one, op
        assert outcome is not None  # _per_target yields at least the request itself
        outcome = self._soften(outcome, tool, arguments)
        if outcome.verdict == "classify":
            outcome = await self._review(outcome, request, tool)
        if outcome.verdict == "ask":
            outcome = await self._ask_person(call_id, tool, outcome, request, worst_op)
        if outcome.blocked:
            self.emit(
                ev.ApprovalRequired(
                    call_id=call_id, tool=tool.name, risk=outcome.risk, prompt=self._prompt(tool, request)
                )
            )
        return outcome

    def begin_message(self, calls: Sequence[ToolCallBlock]) -> None:
        """The calls of one model message, before any runs: a tool with `batch_summary` gets one
        decision for all its calls of the message that share a gated category (`policy.batches`).
        Every call of the message is judged by whether untrusted content was in the conversation
        when the model wrote it: the calls run concurrently, and one call's untrusted result
        arriving before another's check cannot have steered a call written before it (which
        call got there first was a race)."""
        self._batches.begin(calls)
        self._message_untrusted = self.untrusted_content()

    def _untrusted(self) -> bool:
        """Untrusted content as of the current message (`begin_message`), else as of now."""
        return self._message_untrusted if self._message_untrusted is not None else self.untrusted_content()

    def targets_for(self, tool: Any, arguments: dict[str, Any]) -> list[dict[str, str]]:
        """`[{"path": resolved, "operation": ...}]` of a file tool's call, for an event that should
        show what the gate judges (e.g. `tool_started`); [] for other tools or a bad path. The
        check of the call these `arguments` belong to judges these very targets, not resolved
        again; any other check resolves its own."""
        from mermaid_cli.policy.requests import resolve_targets
        from mermaid_cli.security.paths import PathRefused

        self._shown = None
        raw = tool.file_targets(arguments) if hasattr(tool, "file_targets") else None
        if not raw:
            return []
        root = self._root()
        try:
            targets = resolve_targets(root, raw)
        except PathRefused:
            return []
        self._shown = (arguments, str(root), tuple(raw), targets)
        return [{"path": t.path, "operation": t.operation} for t in targets]

    def path_rules(self, path: str, operation: str) -> str | None:
        """The rules no decision lifts (`.git/`/`.mermaid/` read-only, the sandbox's secrets), for
        a path a file tool resolved itself (`ToolContext.path_rules`): None or the refusal."""
        refused = self._path_refusal([_PathOp(path, operation)])
        return refused.reason if refused is not None else None

    def _path_refusal(self, targets: Sequence[Any]) -> PolicyOutcome | None:
        if not targets:
            return None
        from mermaid_cli.policy.screening import protected_dirs, protected_write, secret_access, secret_list

        if self._protected_dirs is None or self._secret_paths is None:  # found once per gate
            self._protected_dirs = protected_dirs(self._root())
            self._secret_paths = secret_list(Path(os.path.expanduser("~")), os.environ)
        policy = self.settings.safety
        return protected_write(targets, policy, self._protected_dirs) or secret_access(
            targets, policy, self._secret_paths
        )

    def _root(self) -> Path:
        return Path(os.path.realpath(self.project_root))

    def _request(
        self, tool: Any, arguments: dict[str, Any], root: Path, *, shown_for: object = None
    ) -> tuple[ActionRequest, list[FileTarget]]:
        """The request and, for a file tool, its resolved targets (PathRefused on a bad path):
        those `targets_for` showed for the call whose arguments are `shown_for`, if they match."""
        from mermaid_cli.policy.requests import request_for_call, resolve_targets

        raw = tool.file_targets(arguments) if hasattr(tool, "file_targets") else None
        shown, self._shown = self._shown, None
        if not raw:
            targets = []
        elif shown is not None and shown[0] is shown_for and shown[1:3] == (str(root), tuple(raw)):
            targets = shown[3]
        else:
            targets = resolve_targets(root, raw)
        request = request_for_call(
            tool.name,
            tool.category_for(arguments)
            if hasattr(tool, "category_for")
            else getattr(tool, "category", "read"),
            arguments,
            project_root=root,
            mcp_read_only_hint=bool(getattr(tool, "read_only_hint", False)),
            targets=targets or None,
        )
        return request, targets

    def _grant(self, request: ActionRequest, targets: list[FileTarget]) -> None:
        """Record what this allow covers for the file tools' own check: per path AND per kind of
        operation, so an allowed outside read never lets a later outside write through."""
        if targets:
            for t in targets:
                if not t.inside:
                    self.allowed_outside.add((t.grant_kind, t.path))
            return
        kind = "read" if request.category == "read" else "write"
        for ref in request.paths:
            if ref.outside_project:
                self.allowed_outside.add((kind, os.path.realpath(ref.path)))

    def _soften(self, outcome: PolicyOutcome, tool: Any, arguments: dict[str, Any]) -> PolicyOutcome:
        """Web calls that make no request (a snapshot read), or go to a host the operator trusts."""
        if outcome.verdict not in ("ask", "classify") and not (outcome.blocked and outcome.by == "headless"):
            return outcome
        if getattr(tool, "category", None) != "web":
            return outcome
        from dataclasses import replace

        from mermaid_cli.integrations.web.trust import call_in_allowed_domains, call_uses_network

        if not call_uses_network(tool.name, arguments):
            return replace(
                outcome, verdict="allow", by="mode", reason="reads a snapshot already fetched", blocked=False
            )
        if self.settings.safety.mode == "auto" and self._untrusted():
            return outcome  # after untrusted content, even trusted hosts go to the reviewer
        if call_in_allowed_domains(self.settings, tool.name, arguments):
            return replace(
                outcome, verdict="allow", by="rule", reason="host in [web] allowed_domains", blocked=False
            )
        return outcome

    async def _review(
        self, outcome: PolicyOutcome, request: ActionRequest, tool: Any = None
    ) -> PolicyOutcome:
        from mermaid_cli.policy.resolution import resolve_review
        from mermaid_cli.policy.reviewer import review

        if self.reviewer is None:
            allow, reason = False, "no reviewer model available"
        else:
            verdict = await review(
                self.reviewer,
                user_request=self.user_request(),
                action=request.summary or request.label,
                cwd=str(self.project_root),
                redact=self.redact,
                # the computer's last screenshot: the reviewer sees what the input would act on
                images=tuple(getattr(tool, "review_images", tuple)()),
            )
            if verdict.usage is not None:
                self.on_usage(verdict.usage)
            allow, reason = verdict.allow, verdict.reason
        return resolve_review(outcome, request, allow=allow, reason=reason, interactive=self.interactive)

    async def _ask_person(
        self, call_id: str, tool: Any, outcome: PolicyOutcome, request: ActionRequest, op: str = "call"
    ) -> PolicyOutcome:
        prompt = self._prompt(tool, request)
        self.emit(ev.ApprovalRequired(call_id=call_id, tool=tool.name, risk=outcome.risk, prompt=prompt))
        if self.approver is None:  # evaluate() blocks headless asks itself; this is a safety net
            from dataclasses import replace

            return replace(
                outcome,
                verdict="deny",
                by="headless",
                blocked=True,
                reason="approval required but nobody can answer",
            )
        from mermaid_cli.policy.resolution import resolve_user

        async with self._prompt_lock:  # concurrent calls of one turn ask one at a time
            answer = await self.approver(tool.name, prompt, outcome.reason)
        if answer == "always" and outcome.allow_key:
            # "don't ask again" covers this operation only (a granted create is not a delete)
            self.session_allow.add(f"{outcome.allow_key}{_OP_SEP}{op}")
        return resolve_user(outcome, approved=answer in ("once", "always"))

    def _prompt(self, tool: Any, request: ActionRequest) -> str:
        return self.redact(f"{tool.name}: {request.summary or request.label}")

    def _deny(self, outcome: PolicyOutcome, request: ActionRequest) -> GateResult:
        reason = outcome.reason
        if outcome.by == "hard_deny":
            message = f"{request.label} was not run: {reason}"
        elif outcome.blocked:
            message = reason
        else:
            message = f"{request.label} blocked by policy: {reason}"
        return GateResult(decision=outcome.decision(), blocked=outcome.blocked, message=self.redact(message))

    # -- the file tools' external-access hook -------------------------------------------------
    def external_access(self, resolved: Any, action: str) -> str | None:
        """The file tools' second check of an outside path (`tools.paths.check_external`): it
        must have been granted by a decision for the same kind of operation. A read grant covers
        what is below the path (a directory listed or searched); a write grant only the path.
        `--confine-fs` refuses every outside write, whatever was granted before."""
        path = str(resolved.path)
        kind = "read" if action == "read" else "write"
        if kind == "write" and getattr(self.settings.safety, "filesystem", None) == "project":
            return (
                f'{path} is outside the project, which safety.filesystem = "project" (--confine-fs) '
                "refuses for writes"
            )
        for granted_kind, granted in self.allowed_outside:
            if granted_kind != kind:
                continue
            if path == granted or (kind == "read" and path.startswith(granted.rstrip(os.sep) + os.sep)):
                return None
        what = "reading" if kind == "read" else "writing"
        return f"{path} is outside the project and the policy did not allow {what} it"


class _PathOp(NamedTuple):
    path: str
    operation: str


_OP_SEP = "|op="


def _granted_for(session_allow: set[str], op: str) -> set[str]:
    """The engine's allow keys remembered for this operation."""
    suffix = f"{_OP_SEP}{op}"
    return {key[: -len(suffix)] for key in session_allow if key.endswith(suffix)}


def _per_target(request: ActionRequest, targets: list[FileTarget]) -> list[ActionRequest]:
    """One request per file (the summary still names them all), or the request itself."""
    if len(targets) <= 1:
        return [request]
    from dataclasses import replace

    return [replace(request, paths=(ref,)) for ref in request.paths]


def _severity(outcome: PolicyOutcome) -> int:
    """Which of a patch's per-file outcomes decides: a hard deny, then any deny, an ask, a review."""
    if outcome.by == "hard_deny":
        return 5
    return {"deny": 4, "ask": 3, "classify": 2, "allow": 1}[outcome.verdict]


def _bad_input(tool: str, reason: str) -> GateResult:
    return GateResult(
        decision=Decision(verdict="deny", by="mode", reason=reason),
        message=f"{tool} was not run: {reason}",
    )


def _as_dict(args: Any, call: ToolCallBlock) -> dict[str, Any]:
    if hasattr(args, "model_dump"):
        data = args.model_dump(mode="json", exclude_none=True)
        extra = getattr(args, "model_extra", None)
        if extra:
            data.update(extra)
        return data
    if isinstance(args, dict):
        return args
    return dict(call.arguments or {})
