"""Turning a tool call into an `ActionRequest`, and an action into the reviewer's one-line text.

This is the only policy module that touches the filesystem: paths are resolved (symlinks
included) against the project root to decide whether they are outside it.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mermaid_cli.config.sections.safety import Category
from mermaid_cli.policy.engine import ActionRequest, PathRef

PATH_KEYS = ("path", "file_path", "paths", "directory", "dir", "target", "destination", "source")
MAX_SUMMARY = 300


def is_outside(project_root: Path, path: str) -> bool:
    root = os.path.realpath(project_root)
    target = os.path.realpath(os.path.join(root, os.path.expanduser(path)))
    return not (target == root or target.startswith(root.rstrip(os.sep) + os.sep))


def request_for_call(
    tool: str,
    category: Category,
    arguments: dict[str, Any] | None,
    *,
    project_root: Path,
    mcp_read_only_hint: bool = False,
) -> ActionRequest:
    """The gate's view of a call. Knows the argument names of our tools (`command`,
    `working_dir`, `path`, `url`, `query`/`queries`, `prompt`); anything else is summarised."""
    args = arguments or {}
    command = args.get("command") if isinstance(args.get("command"), str) else None
    paths: list[PathRef] = []
    for key in PATH_KEYS:
        value = args.get(key)
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, str) and v.strip() and not v.lower().startswith(("http://", "https://")):
                paths.append(PathRef(v, is_outside(project_root, v)))
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
    return replace(request, summary=action_text(request, args))


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
