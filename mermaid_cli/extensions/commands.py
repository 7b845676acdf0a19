"""Prompt commands: `/name args` at the start of a headless prompt expands to a Markdown file's
text before the run, so the transcript, the session and a recording hold the expansion (a replay
needs no plugin). Files: project `<git root>/.mermaid/commands/**/*.md`, user
`<config dir>/commands/**/*.md`, and enabled plugins' `prompts`. Precedence: built-in names >
user > plugin > project (a pull request must not replace the operator's `/review`). The name is
the frontmatter `name:` or the file stem, `[a-z0-9-]+`.
`$ARGUMENTS` becomes everything after the name, `$1`…`$9` its words; with neither, the arguments
are appended. An unknown `/name` is sent as written, with a warning.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mermaid_cli.extensions.frontmatter import NAME_RE, FrontmatterError, parse
from mermaid_cli.security.paths import within

#: the interactive UI's own commands: a file cannot take these names
BUILTIN_COMMANDS = frozenset(
    {
        "agents",
        "clear",
        "compact",
        "config",
        "context",
        "cost",
        "diff",
        "exit",
        "help",
        "init",
        "login",
        "logout",
        "mcp",
        "memory",
        "model",
        "plugin",
        "quit",
        "resume",
        "review",
        "rewind",
        "skills",
        "status",
        "tasks",
        "undo",
    }
)
COMMAND_RE = re.compile(r"/([a-z0-9][a-z0-9-]*)(?=\s|$)")
FILE_MAX_BYTES = 256 * 1024
FILES_MAX = 512
_POSITIONAL = re.compile(r"\$([1-9])")


@dataclass(frozen=True)
class PromptCommand:
    """A `/name` prompt command and where it was defined."""

    name: str
    description: str
    body: str
    #: "project", "user" or "plugin:NAME"
    origin: str
    path: Path


@dataclass(frozen=True)
class CommandRoot:
    """A directory searched recursively (`files` empty) or a plugin's listed files."""

    origin: str
    path: Path | None = None
    files: tuple[Path, ...] = ()
    jail: Path | None = None


@dataclass
class CommandSet:
    """The prompt commands a run knows, and what loading them warned about."""

    commands: dict[str, PromptCommand] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def expand(self, prompt: str) -> tuple[str, str | None]:
        """(the prompt to send, a warning or None). Only a leading `/name` counts; the rest of
        its line is the arguments and any later lines follow the expansion unchanged."""
        match = COMMAND_RE.match(prompt)
        if match is None:
            return prompt, None
        name = match.group(1)
        if name in BUILTIN_COMMANDS:
            return (
                prompt,
                f"/{name} is a built-in command of the interactive UI; the prompt is sent as written",
            )
        command = self.commands.get(name)
        if command is None:
            return prompt, f"/{name} is not a known prompt command; the prompt is sent as written"
        first, newline, rest = prompt.partition("\n")
        args = first[match.end() :].strip()
        text = substitute(command.body, args)
        return (f"{text}\n{rest}" if newline else text), None


def substitute(body: str, args: str) -> str:
    if "$ARGUMENTS" in body or _POSITIONAL.search(body):
        try:
            words = shlex.split(args)
        except ValueError:
            words = args.split()
        text = body.replace("$ARGUMENTS", args)
        return _POSITIONAL.sub(
            lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words) else "", text
        )
    return f"{body}\n\n{args}" if args else body


def discover(roots: Iterable[CommandRoot]) -> CommandSet:
    """Every prompt command; the first root to define a name wins (pass them in precedence order)."""
    out = CommandSet()
    for root in roots:
        for path in _files(root, out.warnings):
            command = _load(path, root, out.warnings)
            if command is None:
                continue
            if command.name in BUILTIN_COMMANDS:
                out.warnings.append(f"prompt command {path}: /{command.name} is a built-in name; skipped")
            elif command.name in out.commands:
                kept = out.commands[command.name]
                if kept.origin == command.origin:
                    out.warnings.append(
                        f"prompt command {path}: a second /{command.name} in {kept.origin}; skipped"
                    )
            else:
                out.commands[command.name] = command
    return out


def _files(root: CommandRoot, warnings: list[str]) -> list[Path]:
    if root.path is None:
        return list(root.files)
    if not root.path.is_dir():
        return []
    found: list[Path] = []
    for base, dirs, files in os.walk(root.path):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(Path(base) / f for f in sorted(files) if f.endswith(".md"))
        if len(found) > FILES_MAX:
            warnings.append(f"{root.path}: over {FILES_MAX} command files; the rest are ignored")
            return found[:FILES_MAX]
    return found


def _load(path: Path, root: CommandRoot, warnings: list[str]) -> PromptCommand | None:
    real = os.path.realpath(path)
    if root.jail is not None and not within(os.path.realpath(root.jail), real):
        warnings.append(f"prompt command {path}: resolves outside {root.jail}; skipped")
        return None
    try:
        if os.path.getsize(real) > FILE_MAX_BYTES:
            warnings.append(f"prompt command {path}: over {FILE_MAX_BYTES // 1024} KiB; skipped")
            return None
        doc = parse(Path(real).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, FrontmatterError) as exc:
        warnings.append(f"prompt command {path}: skipped ({exc})")
        return None
    name = doc.meta.get("name") or path.stem
    if not NAME_RE.fullmatch(name):
        warnings.append(f"prompt command {path}: name {name!r} is not [a-z0-9-]+; skipped")
        return None
    return PromptCommand(name, doc.meta.get("description", ""), doc.body, root.origin, Path(real))
