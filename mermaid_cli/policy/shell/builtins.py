"""What bash itself does with a command's words before any program rule sees them: the reserved
words and assignments in front of the program (`_command_start`), assignments that change which
program runs (`PATH=…`, `LD_PRELOAD=…`), the builtins that run strings (`eval`, `trap`…) or
evaluate array subscripts (`let`, `read`, `printf -v`…, which run the `$(…)` in them), and the
files `time -o` writes. Pure functions over words; the walker (`walker`) applies them.
"""

from __future__ import annotations

import re

from mermaid_cli.policy.shell.syntax import _Cmd
from mermaid_cli.policy.shell.words import (
    _ASSIGNMENT,
    _DANGEROUS_ASSIGNMENT,
    _DECLARERS,
    _RESERVED,
    _base,
    long_option,
)

_SYSTEM_PATH = re.compile(r"^/(?:usr/(?:local/)?)?s?bin/[^/]+$")
_SOURCERS = frozenset({"eval", "source", "."})
_REPARSED_BUILTINS = frozenset({"eval", "alias", "trap", "watch"})
#: builtins that evaluate array subscripts (and so `$(…)`) in their variable-name or arithmetic
#: arguments even when those are quoted
_SUBSCRIPT_BUILTINS = frozenset(
    "let printf read declare typeset local readonly export test [ unset getopts mapfile readarray wait".split()
)


def _subscript_words(prog: str, args: list[str]) -> list[str]:
    """The arguments bash evaluates as arithmetic or as a variable name (with a subscript):
    all of `let`'s, the name after `printf -v` / `test -v`, the names (`a[i]` of `a[i]=v`) of
    `declare`, `read`, `unset`…, and with `declare -n` the nameref target too."""
    if prog == "let":
        return args
    if prog in ("printf", "test", "["):
        return [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-v"]
    nameref = any(a.startswith("-") and "n" in a[1:] for a in args) and prog in (
        "declare",
        "typeset",
        "local",
    )
    names = [a if nameref else a.split("=", 1)[0] for a in args if not a.startswith("-")]
    return [n for n in names if "[" in n or nameref]


def _time_outputs(args: list[str]) -> list[str]:
    """The files `time -o FILE` / `-oFILE` / `--output=FILE` (abbreviable) writes."""
    out: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":
        a = args[i]
        if a == "-o" or (long_option(a, "--output") and "=" not in a):
            out.extend(args[i + 1 : i + 2])
            i += 2
            continue
        if long_option(a, "--output"):
            out.append(a.split("=", 1)[1])
        elif a.startswith("-o") and not a.startswith("--"):
            out.append(a[2:])
        i += 1
    return out


def _command_start(cmd: _Cmd) -> int:
    """Index of the program word: after reserved words (`if`, `!`, `function f`) and assignments;
    past the end for a loop or case header, whose words are data."""
    k = 0
    while k < len(cmd.words):
        word = cmd.words[k]
        if not word.quoted and word.text in _RESERVED:
            k += 2 if word.text == "function" else 1
            if word.text == "time":  # the reserved word's own option: `time -p cmd` runs `cmd`
                while k < len(cmd.words) and not cmd.words[k].quoted and cmd.words[k].text in ("-p", "--"):
                    k += 1
        elif not word.quoted and word.text in ("for", "select", "case"):
            return len(cmd.words)
        elif _ASSIGNMENT.match(word.plain):
            k += 1
        else:
            break
    return k


def _changes_program_lookup(prefix: list[str], argv: list[str]) -> bool:
    """`LD_PRELOAD=x.so ls`, `export PATH=…`: an assignment that changes what later programs run."""
    assignments = [w for w in prefix if _ASSIGNMENT.match(w)]
    if argv and _base(argv[0]) in _DECLARERS:
        assignments += [w for w in argv[1:] if _ASSIGNMENT.match(w)]
    return any(_DANGEROUS_ASSIGNMENT.match(a) for a in assignments)
