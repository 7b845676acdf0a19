"""Step 4 of DESIGN.md §4: does a `[[safety.overrides]]` rule match a request.

A rule matches on tool (glob), category (an outside path also counts as `external_directory`) and
pattern. An `allow` pattern is anchored (a shell command's program and first words, one simple
command only; a path or host exactly), so that `allow git` cannot let `git status; rm -rf x`
through; a `deny` or `ask` pattern is a substring, which errs toward stopping.
"""

from __future__ import annotations

import fnmatch
import re

from mermaid_cli.config.sections.safety import Override
from mermaid_cli.policy.actions import ActionRequest
from mermaid_cli.policy.shell.classifier import ShellClassification


def rule_matches(rule: Override, request: ActionRequest, shell: ShellClassification | None) -> bool:
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
