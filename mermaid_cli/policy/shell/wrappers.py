"""Wrappers the walker looks through (`sudo`, `env`, `timeout`, `nice`, `xargs`…, one unwrapper
each in `UNWRAPPERS`), and the check for file names an `xargs -I`/`find -exec` pastes into code.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mermaid_cli.policy.shell.words import (
    _ASSIGNMENT,
    _PYTHON,
    INTERPRETERS,
    SHELLS,
    WRAPPERS,
    _base,
    _shell_dash_c,
    _skip_options,
    getopt,
    long_option,
)


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


#: `nice -n5`, `nice -n-5`: the adjustment joined to its option
_ADJUSTMENT = re.compile(r"-n[+-]?\d+")


def _unwrap_nice(args: list[str]) -> Unwrapped:
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-n", "--adjustment"):
            i += 2
        elif a.startswith("-") and (
            a[1:].lstrip("-").isdigit() or a.startswith("--adjustment=") or _ADJUSTMENT.fullmatch(a)
        ):
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
