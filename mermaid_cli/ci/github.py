"""A minimal GitHub REST client over urllib (stdlib): JSON in, JSON out, the token in a header.

The base URL is `$GITHUB_API_URL` (GitHub Enterprise and the tests' local stand-in set it). Every
request carries `Authorization: Bearer TOKEN`, `Accept: application/vnd.github+json` and the
pinned `X-GitHub-Api-Version`. A failure is a `GitHubError` with the HTTP status and GitHub's
message, never a traceback; the token never appears in a message.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

API_VERSION = "2022-11-28"
USER_AGENT = "mermaid-action"
TIMEOUT_SECS = 30


class GitHubError(Exception):
    """A request GitHub refused or that did not reach it; `status` is 0 when there was no answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Client:
    """The GitHub REST API for one repository, with the job's token."""

    api_url: str
    token: str
    owner: str
    repo: str

    @classmethod
    def from_env(cls, env: Mapping[str, str], token: str) -> Client:
        repository = env.get("GITHUB_REPOSITORY", "")
        owner, _, repo = repository.partition("/")
        if not owner or not repo:
            raise GitHubError(0, f"GITHUB_REPOSITORY is not owner/repo: {repository!r}")
        api = (env.get("GITHUB_API_URL") or "https://api.github.com").rstrip("/")
        return cls(api_url=api, token=token, owner=owner, repo=repo)

    def repo_path(self, *parts: str | int) -> str:
        quoted = "/".join(urllib.parse.quote(str(p), safe="") for p in parts)
        return f"/repos/{urllib.parse.quote(self.owner)}/{urllib.parse.quote(self.repo)}/{quoted}"

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """`method path` (path from the API root, query included) -> the decoded JSON answer."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.api_url + path, data=data, method=method)
        req.add_header("Accept", "application/vnd.github+json")
        req.add_header("X-GitHub-Api-Version", API_VERSION)
        req.add_header("User-Agent", USER_AGENT)
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_SECS) as resp:  # noqa: S310 - https or the stand-in
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise GitHubError(exc.code, f"{method} {path}: HTTP {exc.code} {_message(exc)}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise GitHubError(0, f"{method} {path}: GitHub API unreachable ({reason})") from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise GitHubError(0, f"{method} {path}: the answer is not JSON") from None


def _message(exc: urllib.error.HTTPError) -> str:
    try:
        data = json.loads(exc.read() or b"{}")
    except (ValueError, OSError):
        return exc.reason or ""
    return str(data.get("message", exc.reason or "")) if isinstance(data, dict) else ""


def load_event(env: Mapping[str, str]) -> dict[str, Any]:
    """The triggering event's payload ($GITHUB_EVENT_PATH); {} when there is none."""
    path = env.get("GITHUB_EVENT_PATH")
    if not path or not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def issue_number(event: Mapping[str, Any]) -> int | None:
    """The pull request or issue the event is about, if any."""
    for key in ("pull_request", "issue"):
        item = event.get(key)
        if isinstance(item, dict) and isinstance(item.get("number"), int):
            return int(item["number"])
    number = event.get("number")
    return number if isinstance(number, int) else None
