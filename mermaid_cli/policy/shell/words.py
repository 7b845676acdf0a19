"""Words and argv: assignments, reserved words, option parsing (GNU-style, with abbreviated long
options), quoting helpers, and the program families the walker looks through itself: shells,
interpreters and wrappers (their unwrappers are in `wrappers`).
"""

from __future__ import annotations

import re

from mermaid_cli.policy.shell.syntax import _Cmd

SHELLS = frozenset("sh bash zsh dash ksh mksh fish csh tcsh ash busybox-sh".split())
INTERPRETERS = frozenset(
    """
    node nodejs deno ruby perl php lua luajit Rscript R julia jshell irb ghci runghc osascript pwsh
    powershell tclsh wish guile racket sbcl ts-node tsx groovy scala kotlin elixir erl escript
    """.split()
)
DOWNLOADERS = frozenset("curl wget fetch http https httpie xh aria2c nc ncat netcat socat lftp".split())
WRAPPERS = frozenset(
    "sudo doas env timeout nice ionice nohup xargs command time exec stdbuf setsid builtin "
    "busybox unbuffer chronic caffeinate taskset chrt".split()
)
PRIVILEGED = frozenset({"sudo", "doas", "su", "pkexec", "run0"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_RESERVED = frozenset("{ } ! if then else elif fi do done while until time function in esac".split())
_PYTHON = re.compile(r"^(?:python|pypy)(?:\d+(?:\.\d+)*)?(?:[mdu])?$")
_FORK_BOMB = re.compile(r"([A-Za-z_:.][\w:.]*)\(\)\{\1\|\1&?\}?;?\1?")

# assignments that change what later programs run (`LD_PRELOAD=x.so ls`, `PAGER='sh -c …' man ls`)
# assignments that change what later programs run (`LD_PRELOAD=x.so ls`, `PAGER='sh -c …' man ls`)
_DANGEROUS_ASSIGNMENT = re.compile(
    r"^(?:LD_\w+|DYLD_\w+|BASH_ENV|ENV|PROMPT_COMMAND|PATH|SHELLOPTS|BASHOPTS|PS4|\w*PAGER|\w*EDITOR|VISUAL"
    r"|BROWSER|LESSOPEN|LESSCLOSE|NODE_OPTIONS|RUBYOPT|PERL5OPT|JAVA_TOOL_OPTIONS"
    r"|GIT_(?:EXTERNAL_DIFF|SSH|SSH_COMMAND|ASKPASS|EXEC_PATH|CONFIG\w*|PROXY_COMMAND))\+?="
)
_DECLARERS = frozenset({"export", "declare", "typeset", "local", "readonly", "env"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1] if "/" in word and not word.endswith("/") else word


def _argv_of(cmd: _Cmd) -> list[str]:
    words = [w.text for w in cmd.words]
    k = 0
    while k < len(words) and (words[k] in _RESERVED or _ASSIGNMENT.match(words[k])):
        k += 1
    return words[k:]


def _reads_stdin(prog: str, args: list[str]) -> bool:
    """Would `prog ARGS` execute code from stdin (as in `curl … | sh`)?"""
    if prog in SHELLS:
        if _shell_dash_c(args) is not None:
            return False
        operands = [a for a in args if not a.startswith("-") and not a.startswith("+")]
        return "-s" in args or not operands or operands[0] == "-"
    # interpreters: no script operand, or `-`
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-c", "-e", "-m", "--eval", "-E", "-r"):
            return False
        if a == "-":
            return True
        if not a.startswith("-"):
            return False
        i += 1
    return True


def _shell_dash_c(args: list[str]) -> str | None:
    """The command string of `sh [opts] -c STRING …`, or None."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return None
        if a.startswith("-") and len(a) > 1 and not a.startswith("--") and "c" in a[1:]:
            return args[i + 1] if i + 1 < len(args) else ""
        if a in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if not a.startswith(("-", "+")):
            return None
        i += 1
    return None


def _skip_options(args: list[str], *, with_arg: set[str]) -> list[str]:
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return args[i + 1 :]
        if not a.startswith("-") or a == "-":
            return args[i:]
        i += 2 if a in with_arg else 1
    return []


GLOB_SUSPECTS = frozenset(
    "rm rmdir chmod chown chgrp dd mkfs shred mv cp tee git curl wget nc ncat netcat sh bash zsh dash "
    "ksh su sudo eval python python3 perl ruby node find xargs env".split()
)
_EXPANSION = re.compile(r"\$\([^()]*\)|`[^`]*`|\$\{[^{}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*#?$!-]")
_BRACE = re.compile(r"\{([^{}\s]*,[^{}\s]*)\}")


def _strip_expansions(word: str) -> str:
    for _ in range(10):
        new = _EXPANSION.sub("", word)
        if new == word:
            break
        word = new
    return word


def _brace_expand(argv: list[str], limit: int = 64) -> list[str] | None:
    """Words after bash brace expansion, or None when no word has `{a,b}`."""
    if not any(_BRACE.search(w) for w in argv):
        return None
    out: list[str] = []
    for w in argv:
        todo: list[str] = [w]
        done: list[str] = []
        while todo and len(done) + len(todo) <= limit:
            cur = todo.pop(0)
            m = _BRACE.search(cur)
            if m is None:
                done.append(cur)
                continue
            todo.extend(cur[: m.start()] + alt + cur[m.end() :] for alt in m.group(1).split(","))
        done.extend(todo)
        out.extend(x for x in done if x != "")
    return out


def _lenient(text: str) -> str:
    return re.sub(r"[\"'`\\#]", " ", text)


def _short_flags(args: list[str]) -> set[str]:
    out: set[str] = set()
    for a in args:
        if a.startswith("-") and not a.startswith("--") and len(a) > 1:
            out.update(a[1:])
    return out


def _operands(args: list[str]) -> list[str]:
    out, after = [], False
    for a in args:
        if after or not a.startswith("-") or a == "-":
            out.append(a)
        elif a == "--":
            after = True
    return out


def long_option(word: str, name: str, *, min_len: int = 3) -> bool:
    """Is `word` the long option `name` (`--output`), abbreviated or not, with or without `=VALUE`?

    GNU getopt accepts any unambiguous prefix (`--outp=f` is `--output=f`). An ambiguous prefix is
    an error for the program, so treating every prefix as the option errs on the safe side."""
    if not word.startswith("--"):
        return False
    given = word.split("=", 1)[0]
    return len(given) >= min_len and name.startswith(given)


def getopt(
    args: list[str], *, short_arg: str = "", long_arg: tuple[str, ...] = (), short_optional: str = ""
) -> tuple[list[tuple[str, str | None]], list[str]]:
    """Parse `args` as GNU getopt would (options may follow operands; `--` ends them).

    Returns ((option, value) pairs, operands). Short options are single letters (`-roFILE` is
    `-r -o FILE` when `o` is in `short_arg`; a letter in `short_optional` takes the rest of its
    word, as sed's `-i.bak`). A long option is named by the first of `long_arg` it abbreviates,
    or by itself; `long_arg` options without `=` take the next word."""
    opts: list[tuple[str, str | None]] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            operands.extend(args[i:])
            break
        if a.startswith("--"):
            name = next((n for n in long_arg if long_option(a, n)), a.split("=", 1)[0])
            if "=" in a:
                opts.append((name, a.split("=", 1)[1]))
            elif name in long_arg and i < len(args):
                opts.append((name, args[i]))
                i += 1
            else:
                opts.append((name, None))
        elif a.startswith("-") and a != "-":
            i = _short_cluster(a[1:], args, i, short_arg, short_optional, opts)
        else:
            operands.append(a)
    return opts, operands


def _short_cluster(
    cluster: str,
    args: list[str],
    i: int,
    short_arg: str,
    short_optional: str,
    opts: list[tuple[str, str | None]],
) -> int:
    for k, ch in enumerate(cluster):
        rest = cluster[k + 1 :]
        if ch in short_optional:
            opts.append((ch, rest or None))
            return i
        if ch in short_arg:
            if rest:
                opts.append((ch, rest))
                return i
            opts.append((ch, args[i] if i < len(args) else None))
            return i + 1
        opts.append((ch, None))
    return i
