"""Words and argv: assignments, reserved words, option parsing (GNU-style, with abbreviated long
options), quoting helpers, and the program families the walker looks through itself: shells,
interpreters and wrappers (`sudo`, `env`, `timeout`, `xargs`…, one unwrapper each in `UNWRAPPERS`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mermaid_cli.policy.shell.parse import _Cmd

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


def _unwrap_all(argv: list[str]) -> list[str]:
    for _ in range(8):
        if not argv:
            return argv
        prog = _base(argv[0])
        if prog not in WRAPPERS:
            return argv
        inner, _ = _unwrap(prog, argv[1:])
        if not inner:
            return argv
        argv = inner
    return argv


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


# -- wrappers: each returns (the wrapped argv or None, a string to re-parse or None)

Unwrapped = tuple[list[str] | None, str | None]

_SUDO_WITH_ARG = frozenset("-u -g -h -p -C -D -r -t -U -T --user --group --chdir --prompt".split())


def _unwrap_sudo(args: list[str]) -> Unwrapped:
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if a in ("-s", "-i", "--shell", "--login") and i + 1 >= len(args):
            return None, None
        if not a.startswith("-"):
            break
        i += 2 if a in _SUDO_WITH_ARG else 1
    return (args[i:] or None), None


def _unwrap_su(args: list[str]) -> Unwrapped:
    for j, a in enumerate(args):
        if a in ("-c", "--command") and j + 1 < len(args):
            return None, args[j + 1]
        if a.startswith("--command="):
            return None, a.split("=", 1)[1]
    return None, None


def _unwrap_env(args: list[str]) -> Unwrapped:
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-S", "--split-string") and i + 1 < len(args):
            return None, " ".join(args[i + 1 :])
        if a.startswith("--split-string="):
            return None, " ".join([a.split("=", 1)[1], *args[i + 1 :]])
        if a in ("-u", "--unset", "-C", "--chdir"):
            i += 2
        elif a == "--" or (a.startswith("-") and a != "-") or _ASSIGNMENT.match(a):
            i += 1
        else:
            break
    return (args[i:] or None), None


def _unwrap_nice(args: list[str]) -> Unwrapped:
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-n", "--adjustment"):
            i += 2
        elif a.startswith("-") and (a[1:].lstrip("-").isdigit() or a.startswith("--adjustment=")):
            i += 1
        elif a == "--":
            i += 1
            break
        else:
            break
    return (args[i:] or None), None


def _unwrap_command(args: list[str]) -> Unwrapped:
    if args and args[0] in ("-v", "-V"):
        return None, None
    return (_skip_options(args, with_arg=set()) or None), None


def _after_options(with_arg: set[str], *, skip_operand: bool = False) -> Callable[[list[str]], Unwrapped]:
    """A wrapper whose command follows its options (and, with `skip_operand`, one operand such as
    the duration of `timeout` or the mask of `taskset`)."""

    def unwrap(args: list[str]) -> Unwrapped:
        rest = _skip_options(args, with_arg=with_arg)
        if skip_operand:
            rest = rest[1:]
        return (rest or None), None

    return unwrap


def _unwrap_xargs(args: list[str]) -> Unwrapped:
    return (_skip_options(args, with_arg=XARGS_WITH_ARG) or ["echo"]), None


XARGS_WITH_ARG = {
    "-I", "-n", "-L", "-P", "-d", "-E", "-s", "-a", "-J",
    "--arg-file", "--delimiter", "--max-args", "--max-procs",
}  # fmt: skip

UNWRAPPERS: dict[str, Callable[[list[str]], Unwrapped]] = {
    **dict.fromkeys(("sudo", "doas", "pkexec", "run0"), _unwrap_sudo),
    "su": _unwrap_su,
    "env": _unwrap_env,
    "nice": _unwrap_nice,
    "command": _unwrap_command,
    "xargs": _unwrap_xargs,
    "timeout": _after_options({"-s", "--signal", "-k", "--kill-after"}, skip_operand=True),
    "ionice": _after_options({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"}),
    "stdbuf": _after_options({"-i", "-o", "-e"}),
    "exec": _after_options({"-a"}),
    "time": _after_options({"-f", "--format", "-o", "--output"}),
    "setsid": _after_options(set()),
    "taskset": _after_options(set(), skip_operand=True),
    "chrt": _after_options(set(), skip_operand=True),
    "caffeinate": _after_options({"-w"}),
}


def _unwrap(prog: str, args: list[str]) -> Unwrapped:
    """(the wrapped argv, or None when there is none; a string to re-parse, for `env -S`/`su -c`).
    Wrappers without an entry (nohup, builtin, busybox, unbuffer, chronic) take options only."""
    return UNWRAPPERS.get(prog, _after_options(set()))(args)


# -- names spliced into code

#: programs whose arguments are code, so a file name pasted into one of them is code too
CODE_RUNNERS = (
    SHELLS
    | INTERPRETERS
    | frozenset("eval awk gawk mawk nawk sed gsed perl ruby node python python3 watch su env".split())
)


def splices_into_code(argv: list[str], placeholder: str) -> str | None:
    """Why running `argv` with `placeholder` replaced by a file name runs that name as code, or None.

    `xargs -I{} sh -c 'wc -l {}'` and `find -exec sh -c 'cat {}' \\;` paste the name into the
    script: a file called `a$(touch PWNED).md` runs `touch`. Passing the name as an argument
    (`sh -c 'wc -l "$1"' _ {}`, `sed -n 1p {}`, `python3 tool.py {}`) is safe."""
    inner = _unwrap_all(argv)
    if not inner:
        return None
    prog = _base(inner[0])
    if prog not in CODE_RUNNERS and not _PYTHON.match(prog):
        return None
    if any(placeholder in code for code in _code_arguments(prog, inner[1:], placeholder)):
        return f"file names are spliced into {prog} code ({placeholder} inside the script)"
    return None


#: the short options that take a value, for programs whose first operand is the script
_SCRIPT_FIRST = {
    **dict.fromkeys(("sed", "gsed"), "efl"),
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), "Fvf"),
}
_CODE_FLAGS = frozenset({"-c", "-e", "-E", "-r", "--eval", "--command", "-S", "--split-string"})


def _code_arguments(prog: str, args: list[str], placeholder: str) -> list[str]:
    """The arguments of `prog` that are code (a script or expression), as far as a name pasted
    into them matters; a whole argument that is just the placeholder is data unless it follows a
    code option (`python3 -c {}`)."""
    if prog in SHELLS:
        code = _shell_dash_c(args)
        return [code] if code is not None else []
    if prog in _SCRIPT_FIRST:
        opts, ops = getopt(args, short_arg=_SCRIPT_FIRST[prog], long_arg=("--expression", "--file"))
        scripts = [val or "" for name, val in opts if name in ("e", "--expression")]
        script_given = scripts or any(name in ("f", "--file") for name, _ in opts)
        return scripts if script_given else ops[:1]
    if prog in ("eval", "watch"):
        return args
    return [
        a
        for k, a in enumerate(args)
        if placeholder in a and (a != placeholder or (k > 0 and args[k - 1] in _CODE_FLAGS))
    ]


def xargs_replace_string(args: list[str]) -> str | None:
    """The replace string of `xargs -I R` / `-IR` / `-i[R]` / `--replace[=R]` / BSD `-J R`, or None
    when xargs appends the names as arguments (which no script re-reads as code)."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--" or not a.startswith("-") or a == "-":
            return None
        if a in ("-I", "-J"):
            return args[i + 1] if i + 1 < len(args) else None
        if a.startswith(("-I", "-J")):
            return a[2:]
        if a.startswith("-i"):
            return a[2:] or "{}"
        if long_option(a, "--replace", min_len=4):
            return a.split("=", 1)[1] if "=" in a else "{}"
        i += 2 if a in XARGS_WITH_ARG else 1
    return None
