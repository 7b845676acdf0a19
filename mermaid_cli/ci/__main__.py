"""`python -m mermaid_cli.ci gate | comment start|follow|finish`: the Action's Python steps.

Inputs arrive as environment variables (as action.yml maps them), results go to $GITHUB_OUTPUT,
messages to stdout as workflow commands. Exit codes: 0 done (a comment that could not be posted
is a warning, never a failed job), 1 the gate refused, 2 a bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from mermaid_cli.ci.comment import (
    DEFAULT_AUTHOR,
    default_key,
    marker,
    read_progress,
    render_final,
    render_running,
    upsert,
)
from mermaid_cli.ci.gate import decide
from mermaid_cli.ci.github import Client, GitHubError, issue_number, load_event

FOLLOW_INTERVAL = 20.0
FOLLOW_MAX_SECS = 6 * 3600  # a job's own limit; the follower never outlives it


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def write_outputs(env: Mapping[str, str], values: Mapping[str, str]) -> None:
    path = env.get("GITHUB_OUTPUT")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        for name, value in values.items():
            f.write(f"{name}={_one_line(value)}\n")


def cmd_gate(env: Mapping[str, str]) -> int:
    token = env.get("INPUT_GITHUB_TOKEN", "").strip()
    verdict = decide(
        env,
        load_event(env),
        token=token,
        allowed_users=env.get("INPUT_ALLOWED_USERS", ""),
        allowed_bots=env.get("INPUT_ALLOWED_BOTS", ""),
        fork_policy=(env.get("INPUT_FORK_PULL_REQUESTS", "") or "read-only").strip(),
    )
    write_outputs(
        env,
        {
            "allowed": "true" if verdict.allowed else "false",
            "read-only": "true" if verdict.read_only else "false",
            "reason": verdict.reason,
        },
    )
    if not verdict.allowed:
        print(f"::error title=Mermaid permission gate::{_escape(verdict.reason)}")
        return 1
    print(f"Mermaid permission gate: {verdict.reason}")
    if verdict.read_only:
        print(f"::notice title=Mermaid permission gate::{_escape(verdict.reason)}")
    return 0


def _comment_target(env: Mapping[str, str]) -> tuple[Client, int, str, str] | None:
    number = issue_number(load_event(env))
    token = env.get("INPUT_GITHUB_TOKEN", "").strip()
    if number is None:
        print("::notice title=Mermaid comment::this event has no pull request or issue; no comment posted")
        return None
    if not token:
        print("::warning title=Mermaid comment::github-token is empty; no comment posted")
        return None
    key = env.get("INPUT_COMMENT_KEY", "").strip() or default_key(env)
    author = env.get("INPUT_COMMENT_AUTHOR", "").strip() or DEFAULT_AUTHOR
    return Client.from_env(env, token), number, marker(key), author


def _comment_id(text: str | None) -> int | None:
    return int(text) if text and text.strip().isdigit() else None


def cmd_comment_start(env: Mapping[str, str]) -> int:
    target = _comment_target(env)
    if target is None:
        return 0
    client, number, mark, author = target
    try:
        cid = upsert(client, number, mark, render_running(env), author, None)
    except (GitHubError, ValueError) as exc:
        print(f"::warning title=Mermaid comment::could not post the comment: {_escape(str(exc))}")
        return 0
    write_outputs(env, {"comment-id": str(cid)})
    return 0


def _not_dumpable() -> None:
    """The follower holds the token while the agent's commands run: keep /proc/PID/environ and
    memory of this process unreadable to them (prctl PR_SET_DUMPABLE 0, Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)


def cmd_comment_follow(env: Mapping[str, str], events: Path, comment_id: int, interval: float) -> int:
    _not_dumpable()
    target = _comment_target(env)
    if target is None:
        return 0
    client, number, mark, author = target
    stop = events.with_name("comment-follow.stop")
    last = ""
    deadline = time.monotonic() + FOLLOW_MAX_SECS
    while time.monotonic() < deadline:
        time.sleep(interval)
        if stop.exists():
            return 0
        progress = read_progress(events)
        if progress.result is not None:
            return 0  # the finish step writes the outcome
        body = render_running(env, progress)
        if body != last:
            with contextlib.suppress(GitHubError, ValueError):
                upsert(client, number, mark, body, author, comment_id)
                last = body
    return 0


def cmd_comment_finish(
    env: Mapping[str, str],
    events: Path | None,
    exit_code: int,
    diff_file: Path | None,
    comment_id: int | None,
) -> int:
    if events is not None:
        stop = events.with_name("comment-follow.stop")
        with contextlib.suppress(OSError):
            stop.write_text("stop\n")  # the follower must not overwrite the outcome
    target = _comment_target(env)
    if target is None:
        return 0
    client, number, mark, author = target
    body = render_final(env, read_progress(events), exit_code, diff_file)
    try:
        upsert(client, number, mark, body, author, comment_id)
    except (GitHubError, ValueError) as exc:
        print(f"::warning title=Mermaid comment::could not update the comment: {_escape(str(exc))}")
    return 0


def main(argv: list[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    parser = argparse.ArgumentParser(prog="python -m mermaid_cli.ci")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("gate", help="the permission gate")
    comment = sub.add_parser("comment", help="the sticky comment")
    comment.add_argument("phase", choices=["start", "follow", "finish"])
    comment.add_argument("--events", type=Path)
    comment.add_argument("--exit-code", type=int, default=0)
    comment.add_argument("--diff-file", type=Path)
    comment.add_argument("--comment-id", default="")
    comment.add_argument("--interval", type=float, default=FOLLOW_INTERVAL)
    args = parser.parse_args(argv)
    try:
        if args.command == "gate":
            return cmd_gate(env)
        cid = _comment_id(args.comment_id)
        if args.phase == "start":
            return cmd_comment_start(env)
        if args.phase == "follow":
            if args.events is None or cid is None:
                parser.error("follow needs --events and --comment-id")
            return cmd_comment_follow(env, args.events, cid, args.interval)
        diff = args.diff_file if args.diff_file and str(args.diff_file) else None
        return cmd_comment_finish(env, args.events, args.exit_code, diff, cid)
    except GitHubError as exc:  # e.g. GITHUB_REPOSITORY missing
        print(f"::error title=Mermaid action::{_escape(exc.message)}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
