"""A local stand-in for the GitHub REST API: a real HTTP server that checks what a client sends.

Every request must carry `Authorization: Bearer <token>`, `Accept: application/vnd.github+json`
and `X-GitHub-Api-Version`; a body must be JSON with `Content-Type: application/json`. It serves
the endpoints the Action uses (collaborator permission, pull requests, issue comments: list,
create, update) from plain dicts, and records every request for the test to assert on.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

OWNER, REPO = "acme", "widgets"
TOKEN = "ghs_STANDINTOKEN0123456789abcdef"
BOT = "github-actions[bot]"


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: Any


@dataclass
class GitHubState:
    permissions: dict[str, str] = field(default_factory=dict)  # login -> admin/write/read/none
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # issue -> comments
    requests: list[Seen] = field(default_factory=list)
    next_id: int = 1000
    lock: threading.Lock = field(default_factory=threading.Lock)

    def comment(self, issue: int, body: str, login: str = BOT) -> dict[str, Any]:
        self.next_id += 1
        item = {"id": self.next_id, "body": body, "user": {"login": login, "type": "Bot"}}
        self.comments.setdefault(issue, []).append(item)
        return item

    def find_comment(self, cid: int) -> dict[str, Any] | None:
        return next((c for cs in self.comments.values() for c in cs if c["id"] == cid), None)


def _handler(state: GitHubState) -> type[BaseHTTPRequestHandler]:
    base = f"/repos/{OWNER}/{REPO}"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _handle(self) -> None:
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = None
            if raw:
                if self.headers.get("Content-Type") != "application/json":
                    return self._send(415, {"message": "body without Content-Type: application/json"})
                body = json.loads(raw)
            with state.lock:
                state.requests.append(
                    Seen(
                        self.command,
                        url.path,
                        parse_qs(url.query),
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                    )
                )
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self._send(401, {"message": "Bad credentials"})
            if self.headers.get("Accept") != "application/vnd.github+json" or not self.headers.get(
                "X-GitHub-Api-Version"
            ):
                return self._send(400, {"message": "missing Accept or X-GitHub-Api-Version"})
            path = url.path
            if m := re.fullmatch(base + r"/collaborators/([^/]+)/permission", path):
                level = state.permissions.get(m.group(1).replace("%5B", "[").replace("%5D", "]"))
                if self.command != "GET" or level is None:
                    return self._send(404, {"message": "Not Found"})
                return self._send(
                    200, {"permission": level, "role_name": level, "user": {"login": m.group(1)}}
                )
            if (m := re.fullmatch(base + r"/pulls/(\d+)", path)) and self.command == "GET":
                pr = state.pulls.get(int(m.group(1)))
                return self._send(200, pr) if pr else self._send(404, {"message": "Not Found"})
            if m := re.fullmatch(base + r"/issues/(\d+)/comments", path):
                issue = int(m.group(1))
                if self.command == "GET":
                    q = parse_qs(url.query)
                    per, page = int(q.get("per_page", ["30"])[0]), int(q.get("page", ["1"])[0])
                    items = state.comments.get(issue, [])
                    return self._send(200, items[(page - 1) * per : page * per])
                if self.command == "POST" and isinstance(body, dict) and isinstance(body.get("body"), str):
                    with state.lock:
                        return self._send(201, state.comment(issue, body["body"]))
                return self._send(422, {"message": "Validation Failed"})
            if (m := re.fullmatch(base + r"/issues/comments/(\d+)", path)) and self.command == "PATCH":
                item = state.find_comment(int(m.group(1)))
                if item is None:
                    return self._send(404, {"message": "Not Found"})
                if item["user"]["login"] != BOT:
                    return self._send(403, {"message": "Resource not accessible by integration"})
                if not (isinstance(body, dict) and isinstance(body.get("body"), str)):
                    return self._send(422, {"message": "Validation Failed"})
                item["body"] = body["body"]
                return self._send(200, item)
            return self._send(404, {"message": f"no route for {self.command} {path}"})

        do_GET = do_POST = do_PATCH = _handle  # noqa: N815

    return Handler


class GitHubStandIn:
    def __init__(self) -> None:
        self.state = GitHubState()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.state))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> GitHubStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def calls(self) -> list[tuple[str, str]]:
        return [(r.method, r.path) for r in self.state.requests]
