"""Turning a tool call into an `ActionRequest`, and an action into the reviewer's one-line text.

This is the only policy module that touches the filesystem: every path is resolved through
`security.paths.locate` (the same function the file tools' jail uses: `~`, `..`, symlinks, a
missing tail through its deepest existing ancestor) before the engine sees it. A file tool names
its targets and their operations (`file_targets(arguments)`: read, create, modify, delete, or
write = create-or-modify, decided here by whether the file exists); a delete is judged on the link
itself, not on what it points to. The request carries the canonical form: a project-relative
posix path inside the project, the resolved absolute path outside; the summary (reviewer, prompt,
events) names the operation and the absolute path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from mermaid_cli.config.sections.safety import Category
from mermaid_cli.policy.actions import ActionRequest, PathRef
from mermaid_cli.security.paths import PathRefused, inside_project, locate

Operation = Literal["read", "create", "modify", "delete"]
OPERATIONS: frozenset[str] = frozenset({"read", "create", "modify", "delete", "write"})


@dataclass(frozen=True)
class FileTarget:
    """One file a call touches, resolved."""

    spelled: str
    #: absolute, resolved (a delete keeps its final symlink)
    path: str
    operation: Operation
    inside: bool
    #: what the engine matches: project-relative inside, absolute outside
    canonical: str

    @property
    def grant_kind(self) -> str:
        """Grants are per kind of operation: a granted read never covers a write."""
        return "read" if self.operation == "read" else "write"


def resolve_targets(project_root: Path, raw: Sequence[tuple[str, str]]) -> list[FileTarget]:
    """Resolve a tool's (path, operation) pairs; a bad spelling raises PathRefused."""
    out: list[FileTarget] = []
    for spelled, op in raw:
        if op not in OPERATIONS:
            raise PathRefused(f"unknown file operation {op!r}")
        found = locate(project_root, spelled, follow_final=op != "delete")
        if op == "write":
            op = "modify" if os.path.lexists(found.path) else "create"
        real = str(found.path)
        # an --add-dir file keeps its absolute path: "x.py" must not read as the project's own
        canonical = (
            os.path.relpath(real, found.root).replace(os.sep, "/") if found.inside and not found.added else real
        )
        out.append(FileTarget(spelled, real, op, found.inside, canonical))  # type: ignore[arg-type]
    return out


PATH_KEYS = ("path", "file_path", "paths", "directory", "dir", "target", "destination", "source")
MAX_SUMMARY = 300


def is_outside(project_root: Path, path: str) -> bool:
    """Resolved, the path leaves the project (a spelling that cannot be resolved counts as outside)."""
    return not inside_project(project_root, path)


def _canonical(project_root: Path, path: str) -> PathRef:
    """A generic path argument (search tools, MCP): resolved like a file tool's target."""
    try:
        found = locate(project_root, path)
    except PathRefused:
        return PathRef(path, True)
    real = str(found.path)
    if found.inside:
        return PathRef(real if found.added else os.path.relpath(real, found.root).replace(os.sep, "/"), False)
    return PathRef(real, True)


def request_for_call(
    tool: str,
    category: Category,
    arguments: dict[str, Any] | None,
    *,
    project_root: Path,
    mcp_read_only_hint: bool = False,
    targets: Sequence[FileTarget] | None = None,
) -> ActionRequest:
    """The gate's view of a call. Knows the argument names of our tools (`command`,
    `working_dir`, `path`, `url`, `query`/`queries`, `prompt`); anything else is summarised.
    `targets`: a file tool's resolved targets, which replace the generic path arguments."""
    args = arguments or {}
    command = args.get("command") if isinstance(args.get("command"), str) else None
    paths: list[PathRef] = []
    if targets is not None:
        paths = [PathRef(t.canonical, not t.inside) for t in targets]
    else:
        for key in PATH_KEYS:
            value = args.get(key)
            values = value if isinstance(value, list) else [value]
            for v in values:
                if isinstance(v, str) and v.strip() and not v.lower().startswith(("http://", "https://")):
                    paths.append(_canonical(project_root, v))
    cwd = args.get("working_dir") or args.get("cwd")
    cwd_outside = isinstance(cwd, str) and bool(cwd.strip()) and is_outside(project_root, cwd)
    if category == "mcp":
        command = None  # an MCP tool's `command` argument is not a shell command
    host = None
    url = args.get("url")
    if isinstance(url, str) and url:
        host = urlsplit(url).netloc.lower() or None
    request = ActionRequest(
        tool=tool,
        category=category,
        command=command if category in ("shell", "process") else None,
        paths=tuple(paths),
        mcp_read_only_hint=mcp_read_only_hint,
        host=host,
        cwd_outside_project=cwd_outside,
    )
    if targets:
        return replace(request, summary=targets_text(tool, targets))
    return replace(request, summary=action_text(request, args))


def targets_text(tool: str, targets: Sequence[FileTarget]) -> str:
    """`write_file create /abs/path`; a patch lists every file: `apply_patch: modify /a; delete /b`.
    Never cut: the reviewer and the person must see every file."""
    if len(targets) == 1:
        return f"{tool} {targets[0].operation} {targets[0].path}"
    return f"{tool}: " + "; ".join(f"{t.operation} {t.path}" for t in targets)


def action_text(request: ActionRequest, arguments: dict[str, Any] | None = None) -> str:
    """One line for prompts and the reviewer, in the original's shapes: the command, `web_fetch
    <url>`, `web_search <q1 | q2>`, `mcp server__tool(args)`, `agent: <prompt>`, `<tool> <path>`."""
    args = arguments or {}
    if request.summary:
        return request.summary
    if request.command is not None:
        text = request.command
    elif request.tool == "web_fetch" and isinstance(args.get("url"), str):
        text = f"web_fetch {args['url']}"
    elif request.tool == "web_search":
        queries = args.get("queries") or ([args["query"]] if isinstance(args.get("query"), str) else [])
        text = "web_search " + " | ".join(str(q) for q in queries)
    elif request.category == "mcp":
        name = request.tool.removeprefix("mcp__")
        text = f"mcp {name}({_compact(args)})"
    elif request.category == "subagent":
        text = f"agent: {args.get('prompt') or args.get('task') or _compact(args)}"
    elif request.paths:
        text = f"{request.tool} {' '.join(p.path for p in request.paths)}"
    else:
        text = f"{request.tool}({_compact(args)})" if args else request.tool
    if request.command is not None or len(text) <= MAX_SUMMARY:
        return text  # the reviewer must see the whole command
    return text[: MAX_SUMMARY - 1] + "…"


def _compact(args: dict[str, Any]) -> str:
    try:
        return json.dumps(args, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(args)
