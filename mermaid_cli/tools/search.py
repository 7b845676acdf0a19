"""glob and grep over the project, honouring .gitignore and skipping .git.

`grep` runs `rg` when it is on PATH and a Python walker otherwise; both print `path:line: text`,
sorted by path then line, so the model cannot tell them apart. Caps: 200 paths / 200 hits.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field

from mermaid_cli.core.types import ToolResult
from mermaid_cli.security.childenv import helper_env
from mermaid_cli.security.paths import fd_path
from mermaid_cli.tools.base import Tool, ToolArgs, ToolContext, cap_text
from mermaid_cli.tools.call_options import uncapped
from mermaid_cli.tools.gitignore import skipped_dirs, translate, walk_files

if TYPE_CHECKING:
    from mermaid_cli.security.sandbox import PreparedSandbox

MAX_PATHS = 200
MAX_HITS = 200
#: hits gathered before sorting and capping; past this the search stops early
COLLECT_LIMIT = 5000
#: with the `scratchpad` parameter the output is not capped; this only bounds memory
UNCAPPED_LIMIT = 1_000_000
MAX_LINE_SHOWN = 500
#: files larger than this are skipped by the Python walker
MAX_GREP_FILE = 64 * 1024 * 1024
_GLOB_CHARS = set("*?[{\\")


def _relative(pattern: str, ctx: ToolContext) -> str:
    """A glob written with the project's absolute path, made relative to it."""
    for root in {os.path.realpath(ctx.project_root), os.path.abspath(ctx.project_root)}:
        if pattern.startswith(root.rstrip("/") + "/"):
            return pattern[len(root.rstrip("/")) + 1 :]
    return pattern


def _split_literal_prefix(pattern: str) -> tuple[list[str], str]:
    """(literal leading directories, the pattern normalised)."""
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.lstrip("/")
    parts = pattern.split("/")
    prefix = []
    for part in parts[:-1]:
        if any(c in _GLOB_CHARS for c in part) or part in ("", ".", ".."):
            break
        prefix.append(part)
    return prefix, pattern


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A path glob: with a `/` it is matched from the project root, without one against file
    names at any depth; `**` spans directories, `{a,b}` alternates."""
    anchored = "/" in pattern
    return re.compile("^" + translate(pattern, anchored=anchored, braces=True) + "$", re.DOTALL)


# --- glob ------------------------------------------------------------------------------------


class GlobArgs(ToolArgs):
    model_config = ConfigDict(**{**ToolArgs.model_config, "populate_by_name": True})  # include_ignored too
    pattern: str = Field(
        description="Glob, e.g. '**/*.py' or 'src/*.ts'; without '/' matches names at any depth."
    )
    limit: int | None = Field(
        default=None, ge=1, le=MAX_PATHS, description=f"Max paths (default {MAX_PATHS})."
    )
    include_ignored: bool = Field(
        default=False,
        alias="includeIgnored",
        description="Also files .gitignore excludes, and node_modules (.git only when the pattern names it).",
    )


class Glob(Tool):
    name = "glob"
    description = "List project files matching a glob (honours .gitignore), sorted by path."
    Args = GlobArgs
    category = "read"

    async def run(self, args: GlobArgs, ctx: ToolContext) -> ToolResult:
        prefix, pattern = _split_literal_prefix(_relative(args.pattern, ctx))
        if ".." in pattern.split("/"):
            return ToolResult.error("glob patterns are relative to the project root; '..' is not allowed")
        try:
            regex = glob_regex(pattern)
        except re.error as exc:
            return ToolResult.error(f"bad glob {args.pattern!r}: {exc}")
        limit = args.limit or (UNCAPPED_LIMIT if uncapped() else MAX_PATHS)
        root = os.path.realpath(ctx.project_root)
        found: list[str] = []
        more = False
        for rel, _abs in walk_files(root, prefix, include_ignored=args.include_ignored):
            if regex.match(rel) and not _kept_from_model(ctx, os.path.join(root, rel)):
                if len(found) >= limit:
                    more = True
                    break
                found.append(rel)
        if not found:
            return ToolResult(content=f"no files match {args.pattern}", summary="0 files")
        text = "\n".join(found)
        if more:
            text += f"\n[capped at {limit} paths; narrow the pattern]"
        return ToolResult(
            content=text if uncapped() else cap_text(text),
            summary=f"{len(found)}{'+' if more else ''} files",
            metadata={"capped": more},
        )


def _kept_from_model(ctx: ToolContext, path: str) -> bool:
    """Whether the gate's path rules keep `path` from the model (one of the sandbox's secrets,
    `ToolContext.path_rules`): a search of a project that is the home directory lists and greps
    around `.ssh`, `.aws` and the like."""
    return ctx.path_rules is not None and ctx.path_rules(path, "read") is not None


def _real(path: str) -> str:
    """`path` resolved; a path being changed under the resolution counts as itself."""
    try:
        return os.path.realpath(path)
    except OSError:
        return path


# --- grep ------------------------------------------------------------------------------------


class GrepArgs(ToolArgs):
    model_config = ConfigDict(**{**ToolArgs.model_config, "populate_by_name": True})  # include_ignored too
    pattern: str = Field(description="Regular expression to search file contents for.")
    include: str | None = Field(default=None, description="Only files matching this glob, e.g. '*.py'.")
    ignore_case: bool = Field(default=False, description="Case-insensitive.")
    include_ignored: bool = Field(
        default=False,
        alias="includeIgnored",
        description="Also files .gitignore excludes, and node_modules (.git only when include names it).",
    )


def collect_limit() -> int:
    return UNCAPPED_LIMIT if uncapped() else COLLECT_LIMIT


@dataclass(frozen=True)
class Hit:
    """One matching line."""

    path: str
    line: int
    text: str


def format_hits(hits: list[Hit], stopped_early: bool) -> tuple[str, bool]:
    hits = sorted(hits, key=lambda h: (h.path, h.line))
    most = UNCAPPED_LIMIT if uncapped() else MAX_HITS
    capped = stopped_early or len(hits) > most
    shown = hits[:most]
    lines = []
    for h in shown:
        text = h.text.rstrip("\r\n")
        if len(text) > MAX_LINE_SHOWN:
            text = text[:MAX_LINE_SHOWN] + " [...]"
        lines.append(f"{h.path}:{h.line}: {text}")
    out = "\n".join(lines)
    if capped:
        out += f"\n[capped at {most} matches; narrow the pattern or use include]"
    return out, capped


def _opened(fd: int, path: str) -> str:
    """Where the file open on `fd` really is (the kernel's answer on Linux: a directory swapped
    for a symlink between the walk and the open shows here)."""
    return fd_path(fd) or _real(path)


def python_grep(
    root: str,
    pattern: str,
    include: str | None,
    ignore_case: bool,
    include_ignored: bool = False,
    refuse: Callable[[str], bool] | None = None,
) -> tuple[list[Hit], bool]:
    """`refuse`: whether a file, by where it really is once open, is kept from the model."""
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    regex = re.compile(pattern, flags)
    slow = backtracking_risk(pattern)
    if slow is not None:
        raise PatternTooSlow(slow)
    prefix: list[str] = []
    inc = None
    if include:
        prefix, norm = _split_literal_prefix(include)
        inc = glob_regex(norm)
    hits: list[Hit] = []
    for rel, path in walk_files(root, prefix, include_ignored=include_ignored):
        if inc is not None and not inc.match(rel):
            continue
        try:
            if os.path.getsize(path) > MAX_GREP_FILE:
                continue
            with open(path, "rb") as fh:
                if refuse is not None and refuse(_opened(fh.fileno(), path)):
                    continue
                data = fh.read()
        except OSError:
            continue
        if b"\x00" in data:
            continue  # binary
        text = data.decode("utf-8", errors="replace")
        if text.startswith("\ufeff"):
            text = text[1:]
        if regex.search(text) is None:
            continue
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()  # the end of the last line, not a line of its own
        for number, line in enumerate(lines, start=1):
            if regex.search(line):
                hits.append(Hit(rel, number, line))
                if len(hits) >= collect_limit():
                    return hits, True
    return hits, False


class PatternTooSlow(ValueError):
    """A regex Python's backtracking engine could take exponential time over (`backtracking_risk`)."""


#: repeats without an upper bound a pattern may have for Python's engine (each one multiplies the
#: work on a line that almost matches)
MAX_UNBOUNDED_REPEATS = 6


def backtracking_risk(pattern: str) -> str | None:
    """Why `pattern` could run for ever in Python's `re` (which holds the GIL, so nothing, not the
    run's --timeout nor SIGTERM, gets to stop it), or None: a repeat whose body starts with a
    repeat (`(a+)+`, `(\\w+\\s?)*`, `(a|b*)*`: every split of a run of `a`s is tried), or more than
    `MAX_UNBOUNDED_REPEATS` unbounded repeats. `(?:_[a-z]+)*` is fine: its body starts with a
    literal. rg's engine is linear and never needs this; the Python walker runs only what rg
    cannot (look-around, backreferences) or where rg is missing."""
    from re import _constants as c  # type: ignore[attr-defined]  # (sre_parse, undeprecated)
    from re import _parser  # type: ignore[attr-defined]

    try:
        parsed = _parser.parse(pattern)
    except re.error:
        return None
    repeats = (c.MAX_REPEAT, c.MIN_REPEAT)
    unbounded = 0

    def starts_with_repeat(items: Any) -> bool:
        for op, av in list(items)[:1]:
            if op in repeats:
                return bool(av[1] > 1)
            if op == c.SUBPATTERN:
                return starts_with_repeat(av[-1])
            if op == c.BRANCH:
                return any(starts_with_repeat(b) for b in av[1])
        return False

    def walk(items: Any) -> bool:
        nonlocal unbounded
        for op, av in items:
            if op in repeats or op == c.POSSESSIVE_REPEAT:
                if av[1] == c.MAXREPEAT:
                    unbounded += 1
                if op in repeats and av[1] > 1 and starts_with_repeat(av[2]):
                    return True
                if walk(av[2]):
                    return True
            elif op == c.SUBPATTERN and walk(av[-1]):
                return True
            elif op == c.BRANCH and any(walk(b) for b in av[1]):
                return True
            elif op in (c.ASSERT, c.ASSERT_NOT) and walk(av[1]):
                return True
        return False

    if walk(parsed):
        return "a repeat of a repeat"
    if unbounded > MAX_UNBOUNDED_REPEATS:
        return f"{unbounded} unbounded repeats"
    return None


RG_FLAGS = [
    "--line-number",
    "--no-heading",
    "--color",
    "never",
    "--null",
    "--hidden",
    "--no-messages",
    "--no-require-git",
    "--no-ignore-global",
    "--no-ignore-exclude",
    "--no-ignore-dot",
    "--no-ignore-parent",
    "--no-config",
]


async def rg_grep(
    rg: str,
    root: str,
    pattern: str,
    include: str | None,
    ignore_case: bool,
    include_ignored: bool = False,
    sandbox: PreparedSandbox | None = None,
) -> tuple[list[Hit], bool] | str:
    """Hits from ripgrep, or an error message. `sandbox`: the run's kernel sandbox, which rg runs
    in like every process started for the model (it keeps the secrets unreadable even through a
    directory swapped for a symlink while rg walks)."""
    cmd = [rg, *RG_FLAGS]
    if ignore_case:
        cmd.append("--ignore-case")
    if include_ignored:
        cmd.append("--no-ignore")  # .gitignore and the other ignore files
    prefix = _split_literal_prefix(include)[0] if include else []
    for name in sorted(skipped_dirs(include_ignored, prefix)):
        cmd += ["--glob", f"!{name}"]  # as the Python walker: .git, node_modules unless asked
    # `include` is filtered here rather than passed as `rg --glob`: rg's globs override
    # .gitignore, which would make the two backends disagree.
    inc = glob_regex(_split_literal_prefix(include)[1]) if include else None
    cmd += ["--regexp", pattern, "--", "."]
    confined = sandbox.popen_kwargs() if sandbox is not None else None
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        cwd=root,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=helper_env(os.environ),
        preexec_fn=confined["preexec_fn"] if confined is not None else None,
        pass_fds=confined["pass_fds"] if confined is not None else (),
    )
    if sandbox is not None:
        sandbox.register(proc.pid)
    assert proc.stdout is not None and proc.stderr is not None
    hits: list[Hit] = []
    stopped = False
    try:
        while True:
            raw = await proc.stdout.readline()
            if not raw:
                break
            path_b, sep, rest = raw.partition(b"\x00")
            if not sep:
                continue
            number_b, _colon, text_b = rest.partition(b":")
            try:
                number = int(number_b)
            except ValueError:
                continue
            path = path_b.decode("utf-8", errors="replace").removeprefix("./")
            if inc is not None and not inc.match(path):
                continue
            hits.append(Hit(path, number, text_b.decode("utf-8", errors="replace").rstrip("\n")))
            if len(hits) >= collect_limit():
                stopped = True
                break
    finally:
        if stopped and proc.returncode is None:
            proc.kill()
        err = await proc.stderr.read()
        await proc.wait()
    if not stopped and proc.returncode not in (0, 1):
        message = err.decode("utf-8", errors="replace").strip() or f"rg exited with {proc.returncode}"
        return message
    return hits, stopped


class Grep(Tool):
    name = "grep"
    description = "Search file contents with a regex (honours .gitignore); prints path:line: text."
    Args = GrepArgs
    category = "read"

    async def run(self, args: GrepArgs, ctx: ToolContext) -> ToolResult:
        root = os.path.realpath(ctx.project_root)
        include = _relative(args.include, ctx) if args.include else None
        if include and ".." in include.split("/"):
            return ToolResult.error("include globs are relative to the project root; '..' is not allowed")
        try:
            re.compile(args.pattern)
        except re.error as exc:
            return ToolResult.error(f"bad regular expression {args.pattern!r}: {exc}")
        rg = None if ctx.grep_backend == "python" else shutil.which("rg")
        got: tuple[list[Hit], bool] | None = None
        if rg:
            answer = await rg_grep(
                rg, root, args.pattern, include, args.ignore_case, args.include_ignored, ctx.sandbox
            )
            if isinstance(answer, str):
                # e.g. a look-around rg's regex engine lacks: Python's walker can still answer
                rg = None
            else:
                got = answer
        if got is not None:
            hits, stopped = got
        else:
            refuse = (lambda real: _kept_from_model(ctx, real)) if ctx.path_rules is not None else None
            try:
                hits, stopped = await asyncio.to_thread(
                    python_grep, root, args.pattern, include, args.ignore_case, args.include_ignored, refuse
                )
            except PatternTooSlow as exc:
                return ToolResult.error(
                    f"regular expression {args.pattern!r} is refused: {exc} could take exponential time "
                    "in Python's regex engine, which runs what rg cannot (look-around, backreferences) "
                    "or all of it without rg; simplify it"
                )
        if rg and ctx.path_rules is not None:
            # a project that holds the sandbox's secrets (the home directory itself) or links to
            # them; the Python walker judged each file as it opened it
            hits = [h for h in hits if not _kept_from_model(ctx, _real(os.path.join(root, h.path)))]
        if not hits:
            return ToolResult(content=f"no matches for {args.pattern}", summary="0 matches")
        text, capped = format_hits(hits, stopped)
        files = len({h.path for h in hits})
        count = f"{min(len(hits), UNCAPPED_LIMIT if uncapped() else MAX_HITS)}{'+' if capped else ''}"
        return ToolResult(
            content=text if uncapped() else cap_text(text),
            summary=f"{count} matches in {files}{'+' if stopped else ''} files",
            metadata={"capped": capped, "backend": "rg" if rg else "python"},
        )
