"""Steps 1-2 of DESIGN.md §4, screening: a request's risk, and the denies that come before
anything else and that nothing later can lift.

The network kill switch (`[safety] network = "deny"`) refuses web tools and shell commands
classified `network`; a hard-deny shape (shell classifier, or an edit of a sensitive path) is
denied as `destructive`; `safety.filesystem = "project"` refuses writes outside the project; a
file tool's write into `.git/` or `.mermaid/`, or its read of a secret, is refused as the sandbox
refuses it (`protected_write`, `secret_access`). The
gate calls `before_hooks` so that hooks never run for a call that is denied anyway; `evaluate`
screens again, so that order is not load-bearing. Pure, but for `protected_dirs` and
`secret_list`, which find the paths those two rules judge against (the gate keeps them).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from mermaid_cli.config.sections.safety import SafetySettings
from mermaid_cli.policy.actions import READ_TOOLS, ActionRequest, PolicyOutcome
from mermaid_cli.policy.shell.classifier import (
    Risk,
    ShellClassification,
    classify_command,
    sensitive_write_rule,
    worst,
)
from mermaid_cli.security.paths import added_dirs, within
from mermaid_cli.security.sandbox.policy import GIT_DIR_NAME, PROTECTED_PROJECT_DIRS, protected_within

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


def before_hooks(
    request: ActionRequest,
    policy: SafetySettings,
    *,
    project_root: Path | None = None,
    home: Path | None = None,
) -> PolicyOutcome | None:
    """Steps 1-2 alone: the deny (network kill switch or hard deny) that makes running the hooks
    pointless, or None. `evaluate` repeats them, so calling this first is optional."""
    return screen(request, policy, project_root=project_root, home=home)[0]


def screen(
    request: ActionRequest, policy: SafetySettings, *, project_root: Path | None, home: Path | None
) -> tuple[PolicyOutcome | None, Risk, ShellClassification | None]:
    """Steps 1-2: (the deny or None, the risk, the shell classification for shell commands)."""
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


class PathOp(Protocol):
    """A resolved path and what a tool does to it (`policy.requests.FileTarget` is one)."""

    @property
    def path(self) -> str: ...

    @property
    def operation(self) -> str: ...


def _spelled_and_resolved(paths: Iterable[Path | str]) -> tuple[str, ...]:
    """Each path as spelled and resolved: targets are resolved, so a protected `.git` or a
    secret that is itself a symlink is judged where it points, as the kernel judges it."""
    spelled = [str(p) for p in paths]
    return tuple(sorted({*spelled, *(os.path.realpath(p) for p in spelled)}))


def protected_dirs(project_root: Path) -> tuple[str, ...]:
    """`.git/` and `.mermaid/` of the project, of the git work tree it is in (its `.git` and
    project config may sit above it) and of every `--add-dir` directory."""
    from mermaid_cli.config.layers import find_git_root

    top = find_git_root(Path(project_root))
    roots = (Path(project_root), *((top,) if top is not None else ()), *(Path(d) for d in added_dirs()))
    return _spelled_and_resolved(protected_within(roots))


def secret_list(home: Path, env: Mapping[str, str]) -> tuple[str, ...]:
    """The sandbox's unreadable paths (`secret_paths`) and the CI runner's command files
    (`$GITHUB_ENV`...)."""
    from mermaid_cli.security.childenv import CI_RUNNER_FILE_VARS
    from mermaid_cli.security.sandbox.policy import secret_paths

    runner_files = (env.get(name, "") for name in CI_RUNNER_FILE_VARS)
    return _spelled_and_resolved([*secret_paths(home), *(p for p in runner_files if os.path.isabs(p))])


def protected_write(
    targets: Sequence[PathOp], policy: SafetySettings, protected: Sequence[str]
) -> PolicyOutcome | None:
    """A file tool's create, modify or delete inside one of the `protected` directories
    (`protected_dirs`), or inside any other `.git` below their roots (`nested_git_dir`: a nested
    repository's or a submodule's, existing or made by the call): denied in every mode but
    `full_access`. The kernel keeps the protected directories read-only for every process started
    for the model (DESIGN §4.1); file tools run in Mermaid itself, so the gate keeps the same rule
    for them, and no prompt or approval lifts it: a hook or a `core.fsmonitor` written there runs
    later, outside any sandbox."""
    if policy.mode == "full_access":
        return None
    roots = {posixpath.dirname(base) for base in protected}
    for target in targets:
        if target.operation == "read":
            continue
        for base in protected:
            if within(base, target.path):
                name = posixpath.basename(base)
                reason = (
                    f"{target.path} is inside {name}/, which is read-only in {policy.mode} mode: nothing "
                    f"run for the model may change {', '.join(d + '/' for d in PROTECTED_PROJECT_DIRS)}"
                )
                return PolicyOutcome("deny", "mode", reason, "destructive")
        git_dir = nested_git_dir(target.path, roots)
        if git_dir is not None:
            reason = (
                f"{target.path} is inside {git_dir}, the git directory of a nested repository, which is "
                f"read-only in {policy.mode} mode: a hook or a config line written there runs when git "
                "runs in that repository"
            )
            return PolicyOutcome("deny", "mode", reason, "destructive")
    return None


def nested_git_dir(path: str, roots: Iterable[str]) -> str | None:
    """The `.git` that `path` (resolved) is or is inside, below the root holding it (the nearest
    of `roots`; a path under none is judged whole): a submodule's or a vendored repository's git
    directory, or a `.git` file, which points git at a directory of its choosing. None if none."""
    holding = [r for r in roots if within(r, path)]
    base = max(holding, key=len) if holding else posixpath.sep
    rest = posixpath.relpath(path, base).split(posixpath.sep)
    if GIT_DIR_NAME not in rest:
        return None
    return posixpath.join(base, *rest[: rest.index(GIT_DIR_NAME) + 1])


def secret_access(
    targets: Sequence[PathOp], policy: SafetySettings, secrets: Sequence[str]
) -> PolicyOutcome | None:
    """A file tool's read (or any other operation) of a secret the sandbox keeps from every
    process (`secrets`: `~/.ssh`, `~/.aws`, `/etc/shadow`..., and the CI runner's command files,
    as absolute paths, resolved and as spelled): denied in every mode but `full_access`, whatever
    a reviewer, a person or `--allow-untrusted-tools` would say, since what is read reaches the
    model and the session, and what is written to `$GITHUB_ENV` changes every later step."""
    if policy.mode == "full_access":
        return None
    for target in targets:
        for secret in secrets:
            if within(secret, target.path):
                reason = (
                    f"{target.path} is kept from everything run for the model ({secret}): it may not be "
                    f"{'read' if target.operation == 'read' else 'changed'} in {policy.mode} mode"
                )
                return PolicyOutcome("deny", "mode", reason, "destructive")
    return None


def _writes_outside(request: ActionRequest, risk: Risk) -> bool:
    """A file mutation of an outside path, or a shell command classified as writing outside."""
    if request.category == "edit":
        return request.outside
    if request.category in ("shell", "process"):
        return risk == "external_access" or request.cwd_outside_project
    return False
