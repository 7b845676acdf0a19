"""The common subset of gitignore semantics, and a project walker that honours it.

Supported: comments, blank lines, `!` negation, `\\` escapes, trailing `/` (directories only),
`/` anchoring (a pattern with a slash other than a trailing one is relative to its .gitignore's
directory), `*`, `?`, `[...]`, and `**` (`**/x`, `x/**`, `a/**/b`). Nested .gitignore files apply
below their directory; the last matching rule wins; an ignored directory is not entered (so its
files cannot be re-included, as in git). `.git` is always skipped, and so are symlinks (neither
followed nor listed, as `rg` does without `-L`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """One .gitignore pattern, compiled."""

    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


#: the pieces `translate` emits for the wildcards: a segment's `*`, any directories (`**/`), the
#: rest of the path (a trailing `**`)
_STAR, _DIRS, _REST = "[^/]*", "(?:.*/)?", ".*"
#: the same, matching as little as they can (see `_linear`)
_LAZY = {_STAR: "[^/]*?", _DIRS: "(?:.*?/)??"}


def translate(pattern: str, *, anchored: bool, braces: bool = False) -> str:
    """A regex (without anchors) for a glob pattern over posix relative paths, matched in time
    linear in the path whatever the pattern (`_linear`)."""
    return _linear(glob_pieces(pattern, anchored=anchored, braces=braces))


def glob_pieces(pattern: str, *, anchored: bool, braces: bool = False) -> list[tuple[str, bool]]:
    """The regex pieces of a glob pattern, each with whether it is outside braces: joined as they
    are, the plain regex `translate` makes linear."""
    pieces: list[tuple[str, bool]] = []
    i = 0
    n = len(pattern)
    depth = 0
    while i < n:
        c = pattern[i]
        if pattern.startswith("**", i):
            at_start = i == 0 or pattern[i - 1] == "/"
            j = i + 2
            if at_start and (j == n or pattern[j] == "/"):
                if j == n:  # trailing `**`: everything below
                    pieces.append((_REST, not depth))
                    i = j
                else:  # `**/`: zero or more directories (`**/**/` is one)
                    if not pieces or pieces[-1] != (_DIRS, not depth):
                        pieces.append((_DIRS, not depth))
                    i = j + 1
                continue
            pieces.append((_STAR, not depth))
            i = j
            continue
        if c == "*":
            piece = _STAR
        elif c == "?":
            piece = "[^/]"
        elif c == "\\" and i + 1 < n:
            i += 1
            piece = re.escape(pattern[i])
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end < 0:
                piece = re.escape(c)
            else:
                body = pattern[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                piece = "[" + body.replace("\\", "\\\\") + "]"
                i = end
        elif braces and c == "{":
            depth += 1
            piece = "(?:"
        elif braces and c == "}" and depth:
            depth -= 1
            piece = ")"
            pieces.append((piece, False))
            i += 1
            continue
        elif braces and c == "," and depth:
            piece = "|"
        else:
            piece = re.escape(c)
        pieces.append((piece, not depth))
        i += 1
    pieces.extend([(")", False)] * depth)
    if not anchored and (not pieces or pieces[0] != (_DIRS, True)):
        pieces.insert(0, (_DIRS, True))
    return pieces


def _linear(pieces: list[tuple[str, bool]]) -> str:
    """Join the pieces, making each wildcard followed by fixed text and then another wildcard of
    the same kind match the earliest such text, atomically: `*a*a*a*b` as nested greedy stars
    backtracks exponentially in a long name (a hostile `.gitignore` hung the walk), and so do
    repeated `**/`. Earliest is exact there: whatever a later match would leave, the next
    wildcard absorbs too. The fixed text is literal characters and `?` only (a class or a brace
    could match differently), and `/` within it only between `**/`s, where it stays on directory
    boundaries. Nothing inside braces takes part."""
    out: list[str] = []
    i = 0
    while i < len(pieces):
        piece, free = pieces[i]
        j = i + 1
        if free and piece in _LAZY:
            while j < len(pieces) and _fixed(pieces[j], across_dirs=piece == _DIRS):
                j += 1
        if j > i + 1 and j < len(pieces) and pieces[j] == (piece, True):
            out.append("(?>" + _LAZY[piece] + "".join(p for p, _ in pieces[i + 1 : j]) + ")")
        else:
            out.extend(p for p, _ in pieces[i:j])
        i = j
    return "".join(out)


def _fixed(piece: tuple[str, bool], *, across_dirs: bool) -> bool:
    """A literal character (escaped) or `?` outside braces; `/` only between `**/`s."""
    text, free = piece
    if not free:
        return False
    if text == "/":
        return across_dirs
    return text == "[^/]" or len(text) == 1 or (len(text) == 2 and text[0] == "\\")


def parse_gitignore(text: str) -> list[Rule]:
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip("\n\r")
        # trailing spaces are ignored unless escaped
        stripped = line.rstrip(" ")
        if stripped.endswith("\\") and len(stripped) < len(line):
            stripped += " "
        line = stripped
        if not line or line.startswith("#"):
            continue
        negate = False
        if line.startswith("!"):
            negate = True
            line = line[1:]
        elif line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        try:
            regex = re.compile("^" + translate(line, anchored=anchored) + "$", re.DOTALL)
        except re.error:
            continue
        rules.append(Rule(regex, negate, dir_only))
    return rules


@dataclass(frozen=True)
class _RuleSet:
    """The rules of one .gitignore and the directory it sits in."""

    base: str  # directory of the .gitignore, relative to the root ("" for the root)
    rules: list[Rule]


def _ignored(rel: str, is_dir: bool, sets: list[_RuleSet]) -> bool:
    verdict = False
    for rs in sets:
        sub = rel[len(rs.base) + 1 :] if rs.base else rel
        for rule in rs.rules:
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.match(sub):
                verdict = not rule.negate
    return verdict


def _load(dir_abs: str, base: str) -> _RuleSet | None:
    path = os.path.join(dir_abs, ".gitignore")
    try:
        if not os.path.isfile(path) or os.path.islink(path):
            return None
        with open(path, encoding="utf-8", errors="replace") as fh:
            rules = parse_gitignore(fh.read())
    except OSError:
        return None
    return _RuleSet(base, rules) if rules else None


#: never walked into unless asked for: by `include_ignored` (not .git) or a pattern naming them
ALWAYS_SKIPPED = (".git", "node_modules")


def skipped_dirs(include_ignored: bool, prefix: list[str] | None = None) -> set[str]:
    """The ALWAYS_SKIPPED names a walk skips: .git unless the pattern's literal prefix starts in
    it, node_modules unless that or `include_ignored`."""
    skipped = set(ALWAYS_SKIPPED)
    if include_ignored:
        skipped.discard("node_modules")
    if prefix:
        skipped.discard(prefix[0])
    return skipped


def walk_files(
    root: str, prefix: list[str] | None = None, *, include_ignored: bool = False
) -> Iterator[tuple[str, str]]:
    """(relative posix path, absolute path) of every regular, non-ignored file below `root`, in
    sorted order. `prefix`: literal leading directory names to restrict the walk to.
    `include_ignored`: files the ignore files exclude too (and node_modules)."""
    prefix = prefix or []
    sets: list[_RuleSet] = []
    first = None if include_ignored else _load(root, "")
    if first:
        sets.append(first)
    yield from _walk(root, "", sets, prefix, skipped_dirs(include_ignored), include_ignored)


def _walk(
    dir_abs: str,
    dir_rel: str,
    sets: list[_RuleSet],
    prefix: list[str],
    skipped: set[str],
    include_ignored: bool,
) -> Iterator[tuple[str, str]]:
    try:
        with os.scandir(dir_abs) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    depth_prefix = prefix[0] if prefix else None
    for entry in entries:
        name = entry.name
        if name in skipped and (dir_rel or name != (prefix[0] if prefix else None)):
            continue  # the prefix may open one at the top (`node_modules/react/**`), no deeper
        if depth_prefix is not None and name != depth_prefix:
            continue
        try:
            if entry.is_symlink():
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = not is_dir and entry.is_file(follow_symlinks=False)
        except OSError:
            continue
        rel = f"{dir_rel}/{name}" if dir_rel else name
        if not is_dir and not is_file:
            continue
        if not include_ignored and _ignored(rel, is_dir, sets):
            continue
        if is_dir:
            child = None if include_ignored else _load(entry.path, rel)
            sub = [*sets, child] if child else sets
            yield from _walk(entry.path, rel, sub, prefix[1:], skipped, include_ignored)
        elif not prefix or len(prefix) == 0:
            yield rel, entry.path
