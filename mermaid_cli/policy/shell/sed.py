"""A reader for sed scripts: which commands write a file (`w`, `W`, the `w` flag of `s`) or run
one (`e`, the `e` flag of `s`). GNU sed syntax: addresses (`1`, `$`, `1~2`, `/re/I`, `\\%re%`,
ranges, `!`), `{…}` blocks, `;` and newlines, text commands (`a`, `i`, `c`) and labels as data.
"""

from __future__ import annotations

# sed commands without arguments, or with a number (q, Q, l, L) or a label/version (v) we skip
_SED_SIMPLE = frozenset("=dDgGhHnNpPxzFqQlLv")


def sed_commands(script: str) -> list[tuple[str, str | None]]:
    """The commands of a sed script that write (`w`/`W`, `s///w FILE`) or run (`e`, `s///e`),
    with the file name, plus `("?", None)` for text this reading does not understand."""
    found: list[tuple[str, str | None]] = []
    i, n = 0, len(script)
    while i < n:
        i = _sed_address(script, i)
        if i >= n:
            break
        ch = script[i]
        i += 1
        if ch in "{};\n \t!":
            continue
        if ch in "#aic:btT":
            # a comment, text (`a hello`) or a label: data up to the end of the line (or `;` for labels)
            i = _sed_line_end(script, i, semicolon=ch in "btT")
        elif ch in "rRwWe":
            end = _sed_line_end(script, i, semicolon=False)
            if ch in "wWe":
                found.append((ch, script[i:end].strip() or None))
            i = end
        elif ch in "sy":
            i = _sed_subst(script, i, ch, found)
        elif ch in _SED_SIMPLE:
            while i < n and (script[i].isdigit() or (ch == "v" and script[i] not in ";\n}")):
                i += 1
        else:
            found.append(("?", None))
            break
    return found


def _sed_address(s: str, i: int) -> int:
    """Skip spaces and the address part (`1`, `$`, `1~2`, `/re/I`, `\\%re%`, `a,b`, `+3`, `!`)."""
    while i < len(s):
        ch = s[i]
        if ch.isspace() or ch.isdigit() or ch in "$,~+!":
            i += 1
        elif ch == "/" or (ch == "\\" and i + 1 < len(s)):
            delim = s[i] if ch == "/" else s[i + 1]
            i = _sed_delimited(s, i + (1 if ch == "/" else 2), delim)
            while i < len(s) and s[i] in "IM":
                i += 1
        else:
            return i
    return i


def _sed_delimited(s: str, i: int, delim: str) -> int:
    """The index after the unescaped `delim` that ends the part starting at `i`."""
    while i < len(s) and s[i] != delim:
        i += 2 if s[i] == "\\" else 1
    return i + 1


def _sed_subst(s: str, i: int, command: str, found: list[tuple[str, str | None]]) -> int:
    if i >= len(s):
        found.append(("?", None))
        return i
    delim = s[i]
    i = _sed_delimited(s, _sed_delimited(s, i + 1, delim), delim)
    if i > len(s):
        found.append(("?", None))
        return i
    if command == "y":
        return i
    while i < len(s) and s[i] not in ";}\n \t#":
        flag = s[i]
        i += 1
        if flag == "e":
            found.append(("e", None))
        elif flag == "w":
            end = _sed_line_end(s, i, semicolon=False)
            found.append(("w", s[i:end].strip() or None))
            return end
        elif not (flag.isdigit() or flag in "gpiImM"):
            found.append(("?", None))
    return i


def _sed_line_end(s: str, i: int, *, semicolon: bool) -> int:
    while i < len(s) and s[i] != "\n" and not (semicolon and s[i] in ";}"):
        i += 2 if s[i] == "\\" else 1
    return i
