"""Append-only JSONL session store: `<project>/.mermaid/conversations/<id>.jsonl`.

Each line is `{"v": 1, "seq": n, "ts": ..., "kind": ..., ...}`:
  started  {session_id, model, cwd, cli_version}      first line of a session file
  run      {model, prompt_chars, resumed}             each run that appends to the session
  message  {index, message}                           one committed conversation message
  event    {event}                                    protocol events (text deltas excluded)
  state    {tasks?, usage?, ...}                      snapshots restored by --resume
  compaction {index, summary, removed: [indices]}     messages a compaction replaced
Lines are flushed as they are written, so a crash leaves a file that still loads; a line that does
not parse is reported and skipped, nothing else is lost.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mermaid_cli.core.errors import UsageError
from mermaid_cli.core.types import Message
from mermaid_cli.store.local import local_dir

FORMAT_VERSION = 1


def conversations_dir(project_root: Path) -> Path:
    return project_root / ".mermaid" / "conversations"


def _ensure_dir(project_root: Path) -> Path:
    return local_dir(project_root, "conversations")  # a real directory, not a committed symlink


def new_session_id(now: datetime) -> str:
    """Time-sortable id like `20261130_094211_123`."""
    return now.strftime("%Y%m%d_%H%M%S_") + f"{now.microsecond // 1000:03d}"


@dataclass
class SessionData:
    """A session file's contents: messages, state and unreadable lines."""

    session_id: str
    path: Path
    messages: list[Message] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    started: dict[str, Any] = field(default_factory=dict)
    bad_lines: list[str] = field(default_factory=list)
    compacted: dict[int, int] = field(default_factory=dict)  # message index -> compaction number
    all_messages: dict[int, Message] = field(default_factory=dict)  # every logged message by index
    context_ids: list[int] = field(default_factory=list)  # log index of each message of `messages`
    compactions: int = 0
    runs: int = 0
    last_seq: int = 0


class SessionWriter:
    """Appends lines to one session file. `redact` is applied to every line before it is written."""

    def __init__(
        self,
        path: Path,
        *,
        redact: Callable[[str], str] = lambda s: s,
        seq: int = 0,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.path = path
        self._redact = redact
        self._seq = seq
        self._clock = clock or (lambda: datetime.now(UTC))
        # unbuffered: each line goes out in one write (no flush step), as whole as before
        self._fh = path.open("ab", buffering=0)
        self._hold(path)
        os.chmod(path, 0o600)
        self._end_torn_line()
        self._size = os.fstat(self._fh.fileno()).st_size
        #: once the run is under way, a line that cannot be written (a full disk) ends the session
        #: file there and is reported through this, once; before (None), it raises
        self.on_lost: Callable[[str], None] | None = None
        self.lost: str | None = None
        self.message_count = 0
        self.compactions = 0

    def _hold(self, path: Path) -> None:
        """One run writes a session at a time: two `--resume` of one session appended the same
        message indices twice, and reading it back kept one run's conversation only."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return
        try:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._fh.close()
            raise UsageError(
                f"session {path.stem} is in use by another run (its file {path} is locked); "
                "wait for it to end, or start a new session"
            ) from None
        except OSError:  # a file system without locks: go on as before
            pass

    def _end_torn_line(self) -> None:
        """A file left mid-line (a crash, a full disk) gets its newline first: a resumed run's first
        line glued to it would be unreadable too, and lose what it says."""
        size = os.fstat(self._fh.fileno()).st_size
        if size:
            with self.path.open("rb") as fh:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    self._fh.write(b"\n")

    def append(self, kind: str, **body: Any) -> None:
        self._write(_compact(self._line(kind, body)))

    def append_encoded(self, kind: str, name: str, encoded: str) -> None:
        """`append(kind, name=value)` for a value already encoded as compact JSON (an event the
        run just wrote to stdout): the same line, without encoding the value twice."""
        head = _compact(self._line(kind, {}))
        self._write(f"{head[:-1]},{_compact(name)}:{encoded}}}")

    def _line(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        self._seq += 1
        return {"v": FORMAT_VERSION, "seq": self._seq, "ts": self._clock().isoformat(), "kind": kind, **body}

    def _write(self, text: str) -> None:
        if self.lost is not None:
            return
        try:
            line = (self._redact(text) + "\n").encode("utf-8", "replace")
            data = memoryview(line)
            while data:
                written = self._fh.write(data)
                if not written:  # a regular file takes every byte unless it cannot (disk full)
                    raise OSError(f"{self.path}: the session line could not be written")
                data = data[written:]
            self._size += len(line)
        except ValueError:  # closed: a late event after the run ended
            pass
        except OSError as exc:
            # never a half-written line: the file goes back to its last whole one
            with contextlib.suppress(OSError):
                os.ftruncate(self._fh.fileno(), self._size)
            if self.on_lost is None:
                raise
            self.lost = f"the session file {self.path} stopped at its last whole line: {exc.strerror or exc}"
            self.on_lost(self.lost)

    def append_message(self, message: Message) -> int:
        index = self.message_count
        self.append("message", index=index, message=message.model_dump(mode="json", exclude_none=True))
        self.message_count += 1
        return index

    def append_compaction(self, removed: list[int], context: list[int | None]) -> None:
        """Mark `removed` messages as summarised away; `context` is the working context after it."""
        self.compactions += 1
        kept = [i for i in context if i is not None]
        self.append("compaction", number=self.compactions, removed=removed, context=kept)

    def close(self) -> None:
        self._fh.close()


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def create_session(project_root: Path, now: datetime, **writer_kw: Any) -> tuple[str, SessionWriter]:
    """A new session file with a fresh time-sortable id (bumped on collision)."""
    d = _ensure_dir(project_root)
    stamp = now
    for _ in range(1000):
        sid = new_session_id(stamp)
        path = d / f"{sid}.jsonl"
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            from datetime import timedelta

            stamp = stamp + timedelta(milliseconds=1)
            continue
        os.close(fd)
        return sid, SessionWriter(path, **writer_kw)
    raise UsageError("could not allocate a session id")  # pragma: no cover


def session_path(project_root: Path, session_id: str) -> Path:
    if not session_id or "/" in session_id or "\\" in session_id or session_id.startswith("."):
        raise UsageError(f"invalid session id {session_id!r}")
    return conversations_dir(project_root) / f"{session_id}.jsonl"


def load_session(project_root: Path, session_id: str, agent_id: str | None = None) -> SessionData:
    """A session, or (with `agent_id`) one of its subagents' sessions, which live in
    `<session>.agents/aN.jsonl` (grandchildren beside their parents)."""
    path = session_path(project_root, session_id)
    if agent_id is not None:
        if not re.fullmatch(r"a[0-9]{1,6}", agent_id):
            raise UsageError(f"invalid agent id {agent_id!r} (expected aN, as `[agent_id: aN]` says)")
        path = path.with_suffix(".agents") / f"{agent_id}.jsonl"
        if not path.is_file():
            raise UsageError(f"session {session_id} has no subagent {agent_id}")
    elif not path.is_file():
        raise UsageError(f"session {session_id} not found under {conversations_dir(project_root)}")
    return read_session_file(path)


def child_sessions(project_root: Path, session_id: str) -> list[str]:
    """The ids of the subagents whose sessions were kept for `session_id`, in id order."""
    directory = session_path(project_root, session_id).with_suffix(".agents")
    if not directory.is_dir():
        return []
    return sorted(
        (p.stem for p in directory.glob("a*.jsonl")), key=lambda s: int(s[1:]) if s[1:].isdigit() else 0
    )


def read_session_file(path: Path) -> SessionData:
    data = SessionData(session_id=path.stem, path=path)
    messages: dict[int, Message] = {}
    context: list[int] | None = None
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
                if not isinstance(line, dict):
                    raise ValueError("not an object")
                if line.get("v", 1) > FORMAT_VERSION:
                    raise ValueError(f"format version {line['v']} is newer than this Mermaid reads")
                data.last_seq = max(data.last_seq, int(line.get("seq", 0)))
                kind = line.get("kind")
                if kind == "started":
                    data.started = line
                elif kind == "run":
                    data.runs += 1
                elif kind == "message":
                    messages[int(line["index"])] = Message.model_validate(line["message"])
                elif kind == "state":
                    data.state.update({k: v for k, v in line.items() if k not in ("v", "seq", "ts", "kind")})
                elif kind == "compaction":
                    data.compactions += 1
                    number = int(line.get("number", data.compactions))
                    for idx in line.get("removed", []):
                        data.compacted[int(idx)] = number
                    context = [int(i) for i in line.get("context", [])]
            except (ValueError, KeyError, TypeError, ValidationError, OverflowError, RecursionError) as exc:
                reason = str(exc).splitlines()[0][:200]
                data.bad_lines.append(f"{path.name}:{lineno}: {reason}")
    data.all_messages = messages
    # The working context: the last compaction's context, then every message logged after it.
    if context is None:
        ids = sorted(messages)
    else:
        last = max(context, default=-1)
        ids = [i for i in context if i in messages] + [i for i in sorted(messages) if i > last]
    data.context_ids = ids
    data.messages = [messages[i] for i in ids]
    return data


def archive_of(path: Path) -> list[Any]:
    """Every logged message of a session, for `context_archive` (compacted ones included)."""
    from mermaid_cli.tools.context import ArchivedMessage

    data = read_session_file(path)
    return [
        ArchivedMessage(index=i, role=m.role, text=render_message(m), compacted_by=data.compacted.get(i))
        for i, m in sorted(data.all_messages.items())
    ]


def render_message(message: Message) -> str:
    from mermaid_cli.core.types import ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock

    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolCallBlock):
            args = (
                json.dumps(block.arguments, ensure_ascii=False)
                if block.arguments is not None
                else block.raw_arguments
            )
            parts.append(f"[tool call {block.name} {args}]")
        elif isinstance(block, ToolResultBlock):
            parts.append(f"[tool result{' (error)' if block.is_error else ''}]\n{block.content}")
        elif isinstance(block, ReasoningBlock) and block.text:
            parts.append(f"[reasoning] {block.text}")
    return "\n".join(parts)


def latest_session_id(project_root: Path) -> str | None:
    d = conversations_dir(project_root)
    if not d.is_dir():
        return None
    files = sorted(d.glob("*.jsonl"), key=lambda p: (p.stat().st_mtime, p.name), reverse=True)
    for p in files:
        if p.stat().st_size > 0:
            return p.stem
    return None


@dataclass
class SessionSummary:
    """One row of `mermaid sessions list`."""

    session_id: str
    updated_at: str
    model: str
    messages: int
    runs: int
    title: str


def list_sessions(project_root: Path) -> list[SessionSummary]:
    d = conversations_dir(project_root)
    out: list[SessionSummary] = []
    if not d.is_dir():
        return out
    for p in sorted(d.glob("*.jsonl")):
        s = read_session_file(p)
        first_user = next((m.text for m in s.messages if m.role == "user" and m.text), "")
        updated = datetime.fromtimestamp(p.stat().st_mtime, UTC).isoformat(timespec="seconds")
        out.append(
            SessionSummary(
                session_id=s.session_id,
                updated_at=updated,
                model=str(s.started.get("model", "")),
                messages=len(s.messages),
                runs=s.runs,
                title=first_user.strip().splitlines()[0][:80] if first_user.strip() else "",
            )
        )
    return out
