"""Who may start a run: the Action's permission gate, run before anything is installed.

The triggering actor (`GITHUB_TRIGGERING_ACTOR`, else `GITHUB_ACTOR`) passes when
- it is a bot (`…[bot]`, or the event's sender is of type Bot) named in `allowed-bots` (`*`: any
  bot); a bot is never let through by its repository permission alone;
- else it is named in `allowed-users` (`*`: anyone, the explicit opt-out of the check);
- else GitHub says it has write access: `GET /repos/{o}/{r}/collaborators/{user}/permission`
  answers `admin`, `maintain` or `write`.
Anything else refuses, and so does every doubt (no token, an API error): fail closed.

A pull request from a fork (head repository ≠ base, or a deleted head) then runs read-only,
or is refused, or runs as configured, as `fork-pull-requests` says (`read-only` by default). An
`issue_comment` on a pull request is looked up (`GET /repos/{o}/{r}/pulls/{n}`) to find out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mermaid_cli.ci.github import Client, GitHubError, issue_number

WRITE_LEVELS = frozenset({"admin", "maintain", "write"})
ForkPolicy = Literal["read-only", "refuse", "allow"]
FORK_POLICIES: tuple[ForkPolicy, ...] = ("read-only", "refuse", "allow")
PR_EVENTS = frozenset(
    {"pull_request", "pull_request_target", "pull_request_review", "pull_request_review_comment"}
)


@dataclass(frozen=True)
class Verdict:
    """Whether the permission gate lets the job run, and why."""

    allowed: bool
    reason: str
    read_only: bool = False
    actor: str = ""


def names(text: str) -> list[str]:
    """A list input: logins separated by commas, spaces or newlines; `#` starts a comment."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        out += [n.strip() for n in line.replace(",", " ").split() if n.strip()]
    return out


def _listed(login: str, listed: list[str]) -> bool:
    return "*" in listed or login.lower() in {n.lower() for n in listed}


def is_bot(login: str, event: Mapping[str, Any]) -> bool:
    sender = event.get("sender")
    sender_is_bot = (
        isinstance(sender, dict)
        and str(sender.get("login", "")).lower() == login.lower()
        and sender.get("type") == "Bot"
    )
    return login.lower().endswith("[bot]") or sender_is_bot


def decide(
    env: Mapping[str, str],
    event: Mapping[str, Any],
    *,
    token: str,
    allowed_users: str,
    allowed_bots: str,
    fork_policy: str,
) -> Verdict:
    """The gate's answer for this run. Calls the GitHub API only when the lists do not decide."""
    if fork_policy not in FORK_POLICIES:
        return Verdict(
            False, f"fork-pull-requests must be one of {', '.join(FORK_POLICIES)}, got {fork_policy!r}"
        )
    actor = (env.get("GITHUB_TRIGGERING_ACTOR") or env.get("GITHUB_ACTOR") or "").strip()
    if not actor:
        return Verdict(False, "no triggering actor (GITHUB_TRIGGERING_ACTOR / GITHUB_ACTOR is empty)")
    client: Client | None = None
    if is_bot(actor, event):
        if not _listed(actor, names(allowed_bots)):
            return Verdict(False, f"{actor} is a bot and not in allowed-bots", actor=actor)
        why = f"{actor} is in allowed-bots"
    elif _listed(actor, names(allowed_users)):
        why = f"{actor} is in allowed-users"
    else:
        if not token:
            return Verdict(False, f"cannot check {actor}'s permission: github-token is empty", actor=actor)
        try:
            client = Client.from_env(env, token)
            answer = client.request("GET", client.repo_path("collaborators", actor, "permission"))
        except GitHubError as exc:
            if exc.status == 404:
                return Verdict(False, f"{actor} is not a collaborator of this repository", actor=actor)
            return Verdict(False, f"cannot check {actor}'s permission: {exc.message}", actor=actor)
        level = _level(answer)
        if level not in WRITE_LEVELS:
            return Verdict(
                False, f"{actor} has {level or 'no'} permission; write access is needed", actor=actor
            )
        why = f"{actor} has {level} permission"
    fork = _from_fork(env, event, token, client)
    if fork is None:
        return Verdict(True, why, actor=actor)
    if fork_policy == "refuse":
        return Verdict(False, f"{fork} and fork-pull-requests is refuse", actor=actor)
    if fork_policy == "read-only":
        return Verdict(True, f"{why}; {fork}, so it runs read-only", read_only=True, actor=actor)
    return Verdict(True, f"{why}; {fork} (fork-pull-requests: allow)", actor=actor)


def _level(answer: Any) -> str:
    """`permission` is admin/write/read/none (maintain shows as write); `role_name` may say maintain."""
    if not isinstance(answer, dict):
        return ""
    level = str(answer.get("permission") or "")
    role = str(answer.get("role_name") or "")
    return role if role in WRITE_LEVELS and level not in WRITE_LEVELS else level


def _from_fork(
    env: Mapping[str, str], event: Mapping[str, Any], token: str, client: Client | None
) -> str | None:
    """A description when the run is for a pull request from a fork, else None. Doubt = fork."""
    name = env.get("GITHUB_EVENT_NAME", "")
    pr: Any = None
    if name in PR_EVENTS:
        pr = event.get("pull_request")
    elif name == "issue_comment":
        issue = event.get("issue")
        if not (isinstance(issue, dict) and issue.get("pull_request")):
            return None  # a comment on a plain issue
        number = issue_number(event)
        try:
            client = client or Client.from_env(env, token)
            pr = client.request("GET", client.repo_path("pulls", number or 0))
        except GitHubError as exc:
            return f"pull request #{number} could not be looked up ({exc.message}), so it counts as a fork"
    else:
        return None
    if not isinstance(pr, dict):
        return "the pull request payload is missing, so it counts as a fork"
    head = (pr.get("head") or {}).get("repo") if isinstance(pr.get("head"), dict) else None
    base = (pr.get("base") or {}).get("repo") if isinstance(pr.get("base"), dict) else None
    head_name = head.get("full_name") if isinstance(head, dict) else None
    base_name = base.get("full_name") if isinstance(base, dict) else env.get("GITHUB_REPOSITORY")
    if not head_name:
        return "the pull request's head repository is gone, so it counts as a fork"
    if str(head_name).lower() != str(base_name or "").lower():
        return f"pull request #{pr.get('number')} comes from the fork {head_name}"
    return None
