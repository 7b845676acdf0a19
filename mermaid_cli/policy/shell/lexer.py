"""The lexical facts of bash the parser (`parse`) needs: its operators (redirects, separators),
the characters that break a word, `$'…'` (ANSI-C) decoding, the end of a `$(( … ))` and of a
heredoc body, and the `{name}` form of a redirect's file descriptor. Pure; no parser state.
"""

from __future__ import annotations

import re

_REDIRECT_OPS = ("&>>", "<<<", "<<-", "<<", ">>", ">|", ">&", "<&", "<>", "&>", ">", "<")
_SEP_OPS = ("&&", "||", "|&", ";;&", ";;", ";&", "|", ";", "&")
_WORD_BREAK = set(" \t\n;&|<>()")


_LIST_CHARS = frozenset(" \t\n")


_ANSI_SIMPLE = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
}


def _ansi_c(text: str) -> str:
    """Decode a `$'…'` string as bash does (`$'\\x72\\x6d'` is `rm`)."""

    def one(m: re.Match[str]) -> str:
        esc = m.group(1)
        head = esc[0]
        if head in _ANSI_SIMPLE:
            return _ANSI_SIMPLE[head]
        try:
            if head == "x" and len(esc) > 1:
                return chr(int(esc[1:], 16))
            if head in "uU" and len(esc) > 1:
                return chr(int(esc[1:], 16))
            if head in "01234567":
                return chr(int(esc, 8) & 0xFF)
        except (ValueError, OverflowError):
            return esc
        if head == "c" and len(esc) > 1:
            return chr(ord(esc[1]) & 0x1F)
        return esc

    return re.sub(
        r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", one, text, flags=re.S
    )


def _is_brace_fd(text: str) -> bool:
    return bool(re.fullmatch(r"\{[A-Za-z_][A-Za-z0-9_]*\}", text))


def _find_arith_end(s: str, start: int) -> int | None:
    """Index of the `))` closing an arithmetic expression opened just before `start`."""
    level, j = 0, start
    while j < len(s):
        ch = s[j]
        if ch == "(":
            level += 1
        elif ch == ")":
            if level == 0:
                return j if s.startswith("))", j) else None
            level -= 1
        j += 1
    return None


def _heredoc_end(s: str, start: int, delim: str, strip_tabs: bool) -> tuple[int, int] | None:
    """(start, end) of the line that closes a heredoc whose body begins at `start` (`<<-` strips
    leading tabs before comparing), or None when no line does."""
    pos, n = start, len(s)
    while pos <= n:
        end = s.find("\n", pos)
        end = n if end < 0 else end
        line = s[pos:end]
        if (line.lstrip("\t") if strip_tabs else line) == delim:
            return pos, end
        if end >= n:
            return None
        pos = end + 1
    return None
