"""The sticky comment: one PR/issue comment per workflow job, found by a hidden HTML marker and
updated in place — "running" when the run starts, progress while it goes, the outcome at the end.

Finding it: the first comment on the issue whose body holds `<!-- mermaid-action:KEY -->` and
whose author is `comment-author` (`github-actions[bot]` for the default token), so a comment
someone else wrote with the same marker is never edited. KEY defaults to `WORKFLOW/JOB`, so two
Mermaid jobs keep two comments. The body is built from the run's event log (already redacted by
Mermaid): status, exit code, cost, turns, tool calls, the files changed with a diff summary, and
the final answer, capped to fit GitHub's 65 536-character limit, `@mentions` defused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mermaid_cli.ci.github import Client

MAX_BODY = 65_000  # GitHub refuses a comment body over 65 536 characters
MAX_ANSWER = 50_000
MAX_PAGES = 30  # 3 000 comments: beyond that a new comment is cheaper than the search
DEFAULT_AUTHOR = "github-actions[bot]"
ICONS = {
    "success": "✅", "failed": "❌", "usage_error": "⚠️", "blocked": "⛔", "limit": "🛑",
    "provider_error": "🔌", "internal_error": "💥", "timeout": "⌛", "interrupted": "✋",
}  # fmt: skip


def marker(key: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_./ -]", "_", key).replace("--", "-_")[:200]
    return f"<!-- mermaid-action:{safe} -->"


def default_key(env: Mapping[str, str]) -> str:
    return f"{env.get('GITHUB_WORKFLOW', 'workflow')}/{env.get('GITHUB_JOB', 'job')}"


def find(client: Client, number: int, mark: str, author: str) -> int | None:
    """The id of our comment on issue/PR `number`, or None."""
    for page in range(1, MAX_PAGES + 1):
        path = client.repo_path("issues", number, "comments") + f"?per_page=100&page={page}"
        batch = client.request("GET", path)
        if not isinstance(batch, list) or not batch:
            return None
        for item in batch:
            if not isinstance(item, dict) or mark not in str(item.get("body") or ""):
                continue
            login = str((item.get("user") or {}).get("login") or "")
            if login.lower() == author.lower() and isinstance(item.get("id"), int):
                return int(item["id"])
        if len(batch) < 100:
            return None
    return None


def upsert(client: Client, number: int, mark: str, body: str, author: str, comment_id: int | None) -> int:
    """Update our comment (by id, else the one `find` finds) or create it; returns its id."""
    text = f"{mark}\n{body}"
    if comment_id is None:
        comment_id = find(client, number, mark, author)
    if comment_id is not None:
        client.request("PATCH", client.repo_path("issues", "comments", comment_id), {"body": text})
        return comment_id
    made = client.request("POST", client.repo_path("issues", number, "comments"), {"body": text})
    if not isinstance(made, dict) or not isinstance(made.get("id"), int):
        raise ValueError("GitHub created the comment but returned no id")
    return int(made["id"])


@dataclass
class Progress:
    """What the event log says so far."""

    result: dict[str, Any] | None = None
    turns: int = 0
    tool_calls: int = 0
    last_tools: list[str] = field(default_factory=list)
    cost: float | None = None


def read_progress(path: Path | None) -> Progress:
    out = Progress()
    if path is None or not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line still being written
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind == "turn_done":
            out.turns += 1
            if isinstance(event.get("cost_usd"), int | float):
                out.cost = (out.cost or 0.0) + float(event["cost_usd"])
        elif kind == "tool_finished":
            out.tool_calls += 1
            out.last_tools = [*out.last_tools, f"{event.get('name')} {event.get('status')}"][-5:]
        elif kind == "result":
            out.result = event
    return out


def defuse(text: str) -> str:
    """Model text in a comment must not ping people or teams: `@name` gets a zero-width space."""
    return re.sub(r"@(?=[A-Za-z0-9_-])", "@\u200b", text)


def _cost(value: Any) -> str:
    return f"${value:.4f}" if isinstance(value, int | float) else "unknown"


def _run_link(env: Mapping[str, str]) -> str:
    server, repo, run = env.get("GITHUB_SERVER_URL"), env.get("GITHUB_REPOSITORY"), env.get("GITHUB_RUN_ID")
    return f"[workflow run]({server}/{repo}/actions/runs/{run})" if server and repo and run else ""


def render_running(env: Mapping[str, str], progress: Progress | None = None) -> str:
    lines = ["### ⏳ Mermaid is working…", ""]
    if progress is not None and (progress.turns or progress.tool_calls):
        lines.append(
            f"{progress.turns} model calls, {progress.tool_calls} tool calls, cost {_cost(progress.cost)}"
        )
        if progress.last_tools:
            lines += ["", "Latest: " + ", ".join(f"`{t}`" for t in progress.last_tools)]
        lines.append("")
    link = _run_link(env)
    if link:
        lines.append(f"Follow the {link}.")
    return "\n".join(lines)


def diff_stats(diff: str) -> list[tuple[str, int, int]]:
    """(path, added, removed) per file of a unified diff."""
    stats: list[tuple[str, int, int]] = []
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[4:].split("\t", 1)[0]
            stats.append((path[2:] if path.startswith("b/") else path, 0, 0))
        elif stats and line.startswith("+") and not line.startswith("+++"):
            p, a, r = stats[-1]
            stats[-1] = (p, a + 1, r)
        elif stats and line.startswith("-") and not line.startswith("---"):
            p, a, r = stats[-1]
            stats[-1] = (p, a, r + 1)
    return stats


def render_final(env: Mapping[str, str], progress: Progress, exit_code: int, diff_file: Path | None) -> str:
    result = progress.result or {}
    status = str(result.get("status") or ("success" if exit_code == 0 else "failed"))
    icon = ICONS.get(status, "❔")
    lines = [f"### {icon} Mermaid: {status} (exit {exit_code})", ""]
    lines += ["| | |", "|---|---|"]
    lines.append(f"| cost | {_cost(result.get('cost_usd'))} |")
    lines.append(f"| turns | {result.get('num_turns', progress.turns)} |")
    lines.append(
        f"| tool calls | {result.get('tool_calls', progress.tool_calls)} ({result.get('tool_errors', 0)} failed) |"
    )
    files = [str(f) for f in result.get("files_changed") or []]
    lines.append(f"| files changed | {len(files)} |")
    lines.append("")
    stats = diff_stats(diff_file.read_text(errors="replace")) if diff_file and diff_file.is_file() else []
    if stats or files:
        rows = [f"- `{p}` +{a} −{r}" for p, a, r in stats] or [f"- `{f}`" for f in files]
        lines += ["<details><summary>Changes</summary>", "", *rows[:100], "", "</details>", ""]
    answer = str(result.get("response") or "").strip()
    if result.get("structured_output") is not None:  # --output-schema: show the JSON, readable
        answer = "```json\n" + json.dumps(result["structured_output"], indent=2, ensure_ascii=False) + "\n```"
    if answer:
        if len(answer) > MAX_ANSWER:
            answer = answer[:MAX_ANSWER] + "\n\n… (cut; the full answer is in the event log)"
        lines += [defuse(answer), ""]
    errors = [str(e) for e in result.get("errors") or []][:5]
    if errors and status != "success":
        lines += [
            "<details><summary>Errors</summary>",
            "",
            *[f"- {defuse(e)[:500]}" for e in errors],
            "",
            "</details>",
            "",
        ]
    link = _run_link(env)
    if link:
        lines.append(f"Details: {link}.")
    body = "\n".join(lines)
    return body if len(body) <= MAX_BODY else body[:MAX_BODY] + "\n…"
