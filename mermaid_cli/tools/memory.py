"""Durable memory: one Markdown fact per file, written by the model with the `memory` tool.

Scopes: `project` (`<project>/.mermaid/memory/`, meant to be committed with the code) and `user`
(`<user_config_dir>/memory/`, every project of this user). Each file has a small frontmatter with
`name` and `description`; the index of names and descriptions (`memory_index`, ≤ 8 KB) goes into
the system prompt, so later runs know what is there and read a fact with `memory search`.

Writes are refused in `read_only` and when the text looks like a secret: a fact file is meant to be
committed, and a key in it would leak to everyone with the repository.
"""

import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from mermaid_cli.core.types import ToolResult
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext, cap_text

Scope = Literal["project", "user"]
SCOPES: tuple[Scope, ...] = ("project", "user")
INDEX_CAP_BYTES = 8000
INDEX_TRUNCATED = "[Memory index truncated - too many entries; find the rest with memory search]"
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_MAX_CONTENT = 20_000
_MAX_DESCRIPTION = 300

# A small local secret check; the tool also refuses anything the run's redactor would hide
# (`ctx.redact`: --mask values, keyring keys, more token shapes). The patterns stay text, compiled
# (and cached by `re`) on the first check: only a memory write reads them (issue 23).
_SECRET_PATTERNS: tuple[tuple[str, str], ...] = (
    ("an API key (sk-...)", r"\bsk-[A-Za-z0-9_-]{16,}"),
    ("a GitHub token", r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    ("a GitHub token", r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    ("an AWS access key id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    (
        "an AWS secret access key",
        r"(?i)aws_?secret_?access_?key\W{0,4}[A-Za-z0-9/+=]{40}",
    ),
    ("a private key", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"),
    ("a Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
)
_SECRET_ENV_NAME = r"(?i)KEY|TOKEN|SECRET|PASSWORD|PASSWD"
# Short env values ("1", "true") would refuse ordinary text.
_MIN_ENV_SECRET_LEN = 8


def find_secret(text: str, env: Mapping[str, str] | None = None) -> str | None:
    """What kind of secret `text` contains, or None. `env` defaults to the process environment."""
    for label, pattern in _SECRET_PATTERNS:
        if re.search(pattern, text):
            return label
    for name, value in (os.environ if env is None else env).items():
        if len(value) >= _MIN_ENV_SECRET_LEN and re.search(_SECRET_ENV_NAME, name) and value in text:
            return f"the value of ${name}"
    return None


@dataclass(frozen=True)
class Fact:
    """One remembered fact and the file that holds it."""

    name: str
    description: str
    content: str
    scope: Scope
    path: Path


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render_fact(name: str, description: str, content: str) -> str:
    return f"---\nname: {name}\ndescription: {_one_line(description)}\n---\n\n{content.strip()}\n"


def parse_fact(text: str, *, fallback_name: str) -> tuple[str, str, str]:
    """(name, description, content) of a fact file; files without frontmatter still load."""
    name, description, body = fallback_name, "", text
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        for i, line in enumerate(lines[1:], start=1):
            if line.strip() == "---":
                for meta in lines[1:i]:
                    key, sep, value = meta.partition(":")
                    if not sep:
                        continue
                    key, value = key.strip().lower(), value.strip().strip("\"'")
                    if key == "name" and value:
                        name = value
                    elif key == "description":
                        description = value
                body = "\n".join(lines[i + 1 :])
                break
    return name, description, body.strip()


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class MemoryStore:
    """The fact files of both scopes. `user_dir` is the user config dir (None: no user scope)."""

    def __init__(self, project_root: Path, user_dir: Path | None) -> None:
        self.project_root = Path(project_root)
        self.user_dir = Path(user_dir) if user_dir is not None else None

    def base(self, scope: Scope) -> Path | None:
        return self.project_root if scope == "project" else self.user_dir

    def directory(self, scope: Scope) -> Path | None:
        base = self.base(scope)
        if base is None:
            return None
        return base / ".mermaid" / "memory" if scope == "project" else base / "memory"

    def _contained(self, path: Path, scope: Scope) -> bool:
        """Whether `path` (symlinks resolved) stays in the project and out of its git directories:
        a repository could otherwise point `.mermaid/memory` elsewhere (or at `.git/hooks`) and
        have us read or write there. The user scope is the user's own (it may well be a symlink
        into a dotfiles repository)."""
        if scope == "user":
            return True
        base = self.project_root
        real, root = path.resolve(), base.resolve()
        if real != root and root not in real.parents:
            return False
        return ".git" not in real.relative_to(root).parts

    def facts(self, scope: Scope | None = None) -> list[Fact]:
        """All facts, project scope first, each scope sorted by name (a stable order for the prompt)."""
        found: list[Fact] = []
        for sc in SCOPES if scope is None else (scope,):
            directory = self.directory(sc)
            if directory is None or not directory.is_dir():
                continue
            for path in sorted(directory.glob("*.md")):
                if not path.is_file() or not self._contained(path, sc):
                    continue
                try:
                    text = path.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                name, description, content = parse_fact(text, fallback_name=path.stem)
                found.append(Fact(name, description, content, sc, path))
        return found

    def find(self, name: str, scope: Scope | None = None) -> Fact | None:
        return next((f for f in self.facts(scope) if f.name == name or f.path.stem == name), None)

    def write(
        self, scope: Scope, stem: str, description: str, content: str, *, name: str | None = None
    ) -> Path:
        """Write the fact file `<stem>.md` of `scope` (frontmatter name `name`, default `stem`)."""
        directory = self.directory(scope)
        if directory is None:
            raise ValueError("the user scope is not available in this run (no user config directory)")
        path = directory / f"{stem}.md"
        if not self._contained(path, scope):
            raise ValueError(f"{path} leads outside the {scope} directory")
        _atomic_write(path, render_fact(name or stem, description, content))
        return path

    def search(self, query: str) -> list[Fact]:
        """Facts whose name, description or content contains every word of `query` (any case)."""
        words = query.lower().split()
        hits = []
        for fact in self.facts():
            haystack = f"{fact.name}\n{fact.description}\n{fact.content}".lower()
            if all(w in haystack for w in words):
                hits.append(fact)
        return hits


def memory_index(project_root: Path, user_dir: Path | None, cap: int = INDEX_CAP_BYTES) -> str:
    """Names and descriptions of every fact, for the system prompt; "" when there are none.
    At most `cap` UTF-8 bytes, truncation marker included."""
    facts = MemoryStore(project_root, user_dir).facts()
    if not facts:
        return ""
    head = "Saved facts (read one with the memory tool, action search):"
    lines = [head]
    size = len(head.encode())
    marker_size = len(INDEX_TRUNCATED.encode()) + 1
    for i, fact in enumerate(facts):
        line = f"- [{fact.scope}] {fact.name}: {_one_line(fact.description)}"
        line_size = len(line.encode()) + 1
        rest_needs_marker = i < len(facts) - 1
        if size + line_size + (marker_size if rest_needs_marker else 0) > cap:
            lines.append(INDEX_TRUNCATED)
            break
        lines.append(line)
        size += line_size
    text = "\n".join(lines)
    if len(text.encode()) > cap:  # a cap too small even for the header
        return INDEX_TRUNCATED if len(INDEX_TRUNCATED.encode()) <= cap else ""
    return text


class MemoryArgs(ToolArgs):
    action: Literal["remember", "update", "forget", "search"] = Field(description="What to do.")
    name: str | None = Field(
        default=None, description="Fact name, lower-case letters, digits, - and _ (remember, update, forget)."
    )
    description: str | None = Field(default=None, description="One line saying what the fact is about.")
    content: str | None = Field(default=None, description="The fact, in Markdown.")
    scope: Scope | None = Field(
        default=None,
        description="project (committed with the code; the default for remember) or user (all projects).",
    )
    query: str | None = Field(default=None, description="Words to look for (search); empty lists every fact.")


class Memory(Tool):
    name = "memory"
    description = (
        "Durable facts for later runs, one Markdown file each: remember (name, description, content, "
        "scope?), update (name, then description and/or content), forget (name), search (query). "
        "Never store secrets."
    )
    Args = MemoryArgs
    category = "memory"

    def category_for(self, arguments: dict[str, Any]) -> str:
        # searching facts reads; only remember/update/forget write
        return "session" if arguments.get("action") == "search" else self.category

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = env

    async def run(self, args: MemoryArgs, ctx: ToolContext) -> ToolResult:
        store = MemoryStore(ctx.project_root, ctx.user_config_dir)
        if args.action == "search":
            return self._search(store, args.query or "")
        if ctx.safety_mode == "read_only":
            return ToolResult.error(
                f"memory {args.action} is refused in read_only mode; memory is read-only here."
            )
        if not args.name:
            return ToolResult.error(f"memory {args.action} needs a name.")
        if not _NAME_RE.match(args.name):
            return ToolResult.error(
                f"invalid fact name {args.name!r}: use 1-64 lower-case letters, digits, '-' or '_' "
                "(e.g. 'test-command')."
            )
        if args.action == "forget":
            return self._forget(store, args)
        text = "\n".join(filter(None, [args.name, args.description, args.content]))
        secret = find_secret(text, self._env)
        if secret is None and ctx.redact(text) != text:
            secret = "a value this run redacts (a key, a token shape or a --mask value)"
        if secret is not None:
            return ToolResult.error(
                f"refused: the fact contains {secret}. Secrets are never stored in memory; "
                "describe where the secret comes from instead (e.g. 'the CI secret DEPLOY_TOKEN')."
            )
        if args.description is not None and len(args.description) > _MAX_DESCRIPTION:
            return ToolResult.error(
                f"description is longer than {_MAX_DESCRIPTION} characters; keep it to one line."
            )
        if args.content is not None and len(args.content) > _MAX_CONTENT:
            return ToolResult.error(f"content is longer than {_MAX_CONTENT} characters; save a shorter fact.")
        if args.action == "remember":
            return self._remember(store, args)
        return self._update(store, args)

    def _remember(self, store: MemoryStore, args: MemoryArgs) -> ToolResult:
        assert args.name is not None
        if not args.description or not args.content:
            return ToolResult.error("memory remember needs name, description and content.")
        scope: Scope = args.scope or "project"
        existing = store.find(args.name, scope)
        if existing is not None:
            return ToolResult.error(
                f"a {scope} fact named {args.name!r} already exists; change it with action update."
            )
        try:
            path = store.write(scope, args.name, args.description, args.content)
        except (ValueError, OSError) as exc:
            return ToolResult.error(f"could not save the fact: {exc}")
        return ToolResult(
            content=f"Remembered {args.name!r} ({scope} scope, {path}).",
            summary=f"Remembered {args.name} ({scope})",
            metadata={"memory_path": str(path)},
        )

    def _update(self, store: MemoryStore, args: MemoryArgs) -> ToolResult:
        assert args.name is not None
        fact = store.find(args.name, args.scope)
        if fact is None:
            return ToolResult.error(f"no fact named {args.name!r}; create it with action remember.")
        if args.description is None and args.content is None:
            return ToolResult.error("memory update needs a new description and/or content.")
        description = args.description if args.description is not None else fact.description
        content = args.content if args.content is not None else fact.content
        try:
            store.write(fact.scope, fact.path.stem, description, content, name=fact.name)
        except (ValueError, OSError) as exc:
            return ToolResult.error(f"could not save the fact: {exc}")
        return ToolResult(
            content=f"Updated {fact.name!r} ({fact.scope} scope).",
            summary=f"Updated {fact.name} ({fact.scope})",
            metadata={"memory_path": str(fact.path)},
        )

    def _forget(self, store: MemoryStore, args: MemoryArgs) -> ToolResult:
        assert args.name is not None
        fact = store.find(args.name, args.scope)
        if fact is None:
            return ToolResult.error(f"no fact named {args.name!r}.")
        try:
            fact.path.unlink()
        except OSError as exc:
            return ToolResult.error(f"could not delete the fact: {exc}")
        return ToolResult(
            content=f"Forgot {fact.name!r} ({fact.scope} scope).", summary=f"Forgot {fact.name}"
        )

    def _search(self, store: MemoryStore, query: str) -> ToolResult:
        hits = store.search(query)
        if not hits:
            what = f"matching {query!r}" if query.strip() else "saved"
            return ToolResult(content=f"No facts {what}.", summary="0 facts")
        blocks = [
            f"## {f.name} [{f.scope}]\n{_one_line(f.description)}\n\n{cap_text(f.content, 4000)}"
            for f in hits
        ]
        return ToolResult(content=cap_text("\n\n".join(blocks)), summary=f"{len(hits)} fact(s)")
