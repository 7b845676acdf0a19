"""Program rules for git: reads, ref and repository changes, the network (push with the
protected-branch hard denies), and the options of reading subcommands that write or run.
`GIT_RULES` is merged into `rules.PROGRAM_RULES`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mermaid_cli.policy.shell.risk import MUTATION, Call, _Verdict
from mermaid_cli.policy.shell.words import long_option

Rule = Callable[[Call], None]

PROTECTED_BRANCH = re.compile(r"^(?:refs/heads/)?(?:main|master|production|prod|release/.*|release)$")

# -- git ------------------------------------------------------------------------------------

_GIT_READ = frozenset(
    """
    status log diff show rev-parse rev-list merge-base show-ref for-each-ref name-rev show-branch
    count-objects version blame annotate ls-files ls-tree cat-file describe shortlog grep whatchanged
    cherry check-ignore check-attr check-ref-format var help diff-tree diff-index diff-files
    fsck verify-commit verify-tag range-diff get-tar-commit-id help
    """.split()
)
_GIT_NETWORK = frozenset("push fetch pull clone ls-remote request-pull send-email".split())
_GIT_GLOBAL_WITH_ARG = frozenset("-C --git-dir --work-tree --namespace --exec-path --super-prefix".split())
_GIT_REF_CHANGES = frozenset(
    "-d -D -m -M -c -C --delete --move --copy -u --set-upstream-to --unset-upstream -f --force -a -s "
    "--edit-description".split()
)


def _git(x: Call) -> None:
    v = x.v
    start = _git_subcommand(x.args)
    if start is None:
        return
    i, config_override = start
    sub, rest = x.args[i], x.args[i + 1 :]
    if config_override:
        v.raise_to("shell_mutation", "git -c can run configured commands")
    if sub == "reset" and any(len(a) >= 4 and "--hard".startswith(a) for a in rest):
        v.deny("git reset --hard is hard-denied and cannot be approved")
    elif sub == "push":
        _git_push(rest, v)
    elif sub in _GIT_NETWORK or (sub == "remote" and rest[:1] in (["show"], ["update"], ["prune"])):
        v.raise_to("network", f"git {sub} reaches the network")
    elif (
        sub in ("submodule", "lfs")
        and rest[:1]
        and rest[0] in ("update", "sync", "fetch", "pull", "push", "foreach", "add")
    ):
        v.raise_to("network", f"git {sub} {rest[0]} reaches the network")
    elif sub in _GIT_READ:
        _git_read(sub, rest, v)
    elif sub in ("branch", "tag") and any(
        a in _GIT_REF_CHANGES and not (sub == "branch" and a == "-a") for a in rest
    ):
        v.raise_to("shell_mutation", f"git {sub} changes refs")
    elif not _git_lists(sub, rest):
        v.raise_to("shell_mutation", f"git {sub} changes the repository")


def _git_subcommand(args: list[str]) -> tuple[int, bool] | None:
    """(index of the subcommand, whether a global option can run configured commands), or None
    for `git`, `git --version`, `git --help`."""
    i = 0
    config_override = False
    while i < len(args):
        a = args[i]
        if a in _GIT_GLOBAL_WITH_ARG:
            config_override |= a == "--exec-path"
            i += 2
        elif a == "-c" or a.startswith("--config-env") or a.startswith("--exec-path="):
            config_override = True
            i += 2 if a in ("-c", "--config-env") else 1
        elif a in ("--version", "--help", "-h"):
            return None
        elif a.startswith("-"):
            i += 1
        else:
            return i, config_override
    return None


def _git_read(sub: str, rest: list[str], v: _Verdict) -> None:
    """A reading subcommand, but some of its options write a file or run a program."""
    for a in rest:
        if a.startswith("--output") or long_option(a, "--output", min_len=4):
            v.raise_to(MUTATION, f"git {sub} {a} writes a file")
        elif sub == "fsck" and long_option(a, "--lost-found", min_len=3):
            v.raise_to(MUTATION, "git fsck --lost-found writes .git/lost-found")
        elif (
            long_option(a, "--ext-diff", min_len=4)
            or long_option(a, "--open-files-in-pager", min_len=4)
            or a.startswith(("-O", "--textconv"))
            or long_option(a, "--textconv", min_len=4)
        ):
            v.raise_to("process", f"git {sub} {a} runs a program")


def _git_lists(sub: str, rest: list[str]) -> bool:
    """Is this the listing form of a subcommand that can also change things (`git branch`)?"""
    positional = [a for a in rest if not a.startswith("-")]
    first = rest[:1]
    listing: dict[str, Callable[[], bool]] = {
        "branch": lambda: not positional or any(a in ("-l", "--list") for a in rest),
        "tag": lambda: not positional or any(a in ("-l", "--list", "-v", "--verify") for a in rest),
        "stash": lambda: first in (["list"], ["show"]),
        "remote": lambda: not rest or first in (["-v"], ["get-url"], ["--verbose"]),
        "config": lambda: any(a.startswith("--get") or a in ("--list", "-l", "get", "list") for a in rest),
        "worktree": lambda: first == ["list"],
        "notes": lambda: first in (["list"], ["show"], []),
        "reflog": lambda: not rest or rest[0] in ("show",) or rest[0].startswith("-"),
        "submodule": lambda: not rest or first in (["status"], ["summary"]),
        "lfs": lambda: first in (["ls-files"], ["status"], ["env"], ["version"]),
        "clean": lambda: any(a in ("-n", "--dry-run") for a in rest),
        "archive": lambda: not any(a.startswith(("-o", "--output", "--remote")) for a in rest),
        "format-patch": lambda: "--stdout" in rest,
    }
    check = listing.get(sub)
    return check is not None and check()


def _git_push(rest: list[str], v: _Verdict) -> None:
    force = any(
        a.startswith(("--forc", "--mir")) or (a.startswith("-") and not a.startswith("--") and "f" in a[1:])
        for a in rest
    )
    delete = any(a in ("--delete", "-d") for a in rest)
    with_arg = {"--repo", "-o", "--push-option", "--receive-pack", "--exec"}
    positional: list[str] = []
    i = 0
    while i < len(rest):
        a = rest[i]
        if a in with_arg:
            i += 2
            continue
        if not a.startswith("-"):
            positional.append(a)
        i += 1
    refspecs = positional[1:]
    if any(r.startswith("+") for r in refspecs):
        force = True
    if "--all" in rest or "--mirror" in rest or "--branches" in rest:
        refspecs = refspecs or ["main"]

    def dst(ref: str) -> str:
        ref = ref.lstrip("+")
        return ref.split(":", 1)[1] if ":" in ref else ref

    def risky(ref: str) -> bool:
        d = dst(ref)
        return bool(PROTECTED_BRANCH.match(d)) or d in ("HEAD", "@", "") or "$" in d or "*" in d

    if force and (not refspecs or any(risky(r) for r in refspecs)):
        target = next((dst(r) for r in refspecs if risky(r)), None) or "the current branch"
        v.deny(f"git push --force to a protected branch ({target}) is hard-denied and cannot be approved")
        return
    for r in refspecs:
        if (delete and PROTECTED_BRANCH.match(r.lstrip("+"))) or (
            r.startswith(":") and PROTECTED_BRANCH.match(r[1:])
        ):
            v.deny(f"deleting the protected branch {r.lstrip(':')} is hard-denied and cannot be approved")
            return
    v.raise_to("network", "git push reaches the network")


GIT_RULES: dict[str, Rule] = {"git": _git}
