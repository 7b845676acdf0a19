"""Program rules for development tools: language package managers (pip, npm, cargo, go, uv…),
interpreters and build tools. `DEV_RULES` and `PATTERN_RULES` are merged into
`rules.PROGRAM_RULES`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mermaid_cli.policy.shell.risk import MUTATION, Call, _Verdict
from mermaid_cli.policy.shell.words import _PYTHON, INTERPRETERS, _skip_options, getopt

Rule = Callable[[Call], None]

BUILD_TOOLS = frozenset(
    """
    make gmake cmake ctest ninja meson bazel bazelisk buck pytest py.test tox nox mvn mvnw gradle
    gradlew ant sbt swift swiftc rustc rustup gcc g++ cc c++ clang clang++ ld javac java tsc eslint
    prettier ruff black mypy pyright flake8 pylint isort jest vitest mocha karma rspec rake
    bundle bundler composer mix dotnet-test npx bunx pnpx corepack poetry pipenv hatch pdm uv uvx
    flit twine maturin nix-build nix-shell nix docker-compose podman-compose air watchexec
    cargo-nextest go-task task just pre-commit coverage nosetests phpunit rebar3 stack cabal zig
    deno-task yarnpkg lerna nx turbo webpack vite rollup esbuild parcel babel sass tailwindcss
    """.split()
)

PROCESS = frozenset(
    "kill pkill killall xkill source . docker podman nerdctl parallel tmux screen expect "
    "xdg-open open".split()
)

_PIP = re.compile(r"^pip(?:\d+(?:\.\d+)*)?$")

# -- package managers -----------------------------------------------------------------------


def _pip(args: list[str], v: _Verdict) -> None:
    ops = _skip_options(args, with_arg={"--python", "--log", "--proxy", "--cache-dir"})
    sub = ops[0] if ops else None
    if sub in ("install", "uninstall"):
        if "--dry-run" in args:
            v.raise_to("network", f"pip {sub} --dry-run resolves packages over the network")
            return
        v.raise_to("system_mutation", f"pip {sub} changes installed packages")
    elif sub in ("download", "wheel", "index", "search"):
        v.raise_to("network", f"pip {sub} reaches the network")
    elif sub in (
        None,
        "list",
        "show",
        "freeze",
        "check",
        "help",
        "debug",
        "inspect",
        "config",
        "cache",
        "hash",
    ):
        if sub == "cache" and ops[1:2] in (["purge"], ["remove"]):
            v.raise_to(MUTATION, "pip cache purge deletes files")
        if sub == "config" and ops[1:2] in (["set"], ["unset"], ["edit"]):
            v.raise_to("shell_mutation", "pip config changes configuration")
        return
    else:
        v.raise_to("process", f"pip {sub}")


def _pip_rule(x: Call) -> None:
    _pip(x.args, x.v)


_PYTHON_OPTIONS_WITH_ARG = frozenset({"-W", "-X", "-Q"})


def _python(x: Call) -> None:
    prog, args, v = x.prog, x.args, x.v
    if not args:
        v.raise_to("process", f"{prog} runs code from stdin")
        return
    if args[0] in ("--version", "-V", "--help", "-h"):
        return
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        a = args[i]
        if a == "-m" and i + 1 < len(args):
            _python_module(args[i + 1], args[i + 2 :], x)
            return
        if a.startswith("-m") or "c" in a[1:] and not a.startswith("--"):
            break  # `-mjson.tool`, `-c CODE`: runs code
        i += 2 if a in _PYTHON_OPTIONS_WITH_ARG else 1
    # a script, `-c CODE`, `-` (stdin): runs code; a later `-m` belongs to the script
    v.raise_to("process", f"{prog} runs code")


def _python_module(mod: str, rest: list[str], x: Call) -> None:
    v = x.v
    if mod in ("pip", "pip3"):
        _pip(rest, v)
    elif mod == "json.tool":
        # `python -m json.tool IN OUT` writes OUT
        _, ops = getopt(rest, long_arg=("--indent",))
        if len(ops) >= 2:
            x.write(ops[1], "python -m json.tool IN OUT")
    elif mod == "http.server":
        v.raise_to("network", "python -m http.server listens on a socket")
    elif mod in ("venv", "virtualenv", "ensurepip"):
        v.raise_to("process", f"python -m {mod} creates an environment")
    else:
        v.raise_to("process", f"python -m {mod} runs code")


def _js_pm(prog: str, args: list[str], v: _Verdict) -> None:
    ops = [a for a in args if not a.startswith("-")]
    sub = ops[0] if ops else None
    global_flag = any(a in ("-g", "--global", "--location=global") for a in args)
    if prog == "yarn" and sub == "global":
        v.raise_to("system_mutation", "yarn global changes machine-wide packages")
        return
    installs = {
        "install",
        "i",
        "add",
        "ci",
        "uninstall",
        "remove",
        "rm",
        "un",
        "update",
        "up",
        "upgrade",
        "link",
        "unlink",
        "r",
    }
    if global_flag and (sub in installs or sub is None):
        v.raise_to("system_mutation", f"{prog} {sub or ''} -g changes machine-wide packages")
        return
    if sub in (
        "publish",
        "unpublish",
        "deprecate",
        "login",
        "logout",
        "adduser",
        "owner",
        "dist-tag",
        "access",
        "view",
        "info",
        "show",
        "search",
        "whoami",
        "ping",
    ):
        v.raise_to("network", f"{prog} {sub} talks to the registry")
        return
    if sub in ("ls", "list", "ll", "la", "root", "prefix", "bin", "help", "why", "explain", "config") and (
        sub != "config" or ops[1:2] in (["get"], ["list"])
    ):
        return
    if not args or args[0] in ("--version", "-v", "--help", "-h"):
        if not args and prog in ("yarn", "bun"):
            v.raise_to("process", f"{prog} installs project dependencies")
        return
    v.raise_to("process", f"{prog} {sub or ''} runs project scripts".replace("  ", " "))


def _js_pm_rule(x: Call) -> None:
    _js_pm(x.prog, x.args, x.v)


#: subcommands that change machine-wide tools, per language package manager
_LANG_SYSTEM_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "cargo": frozenset({"install", "uninstall"}),
    "go": frozenset({"install"}),
    "gem": frozenset({"install", "uninstall", "update", "cleanup"}),
    "rustup": frozenset(
        {"toolchain", "default", "update", "component", "target", "self", "install", "uninstall"}
    ),
    "deno": frozenset({"install", "uninstall", "upgrade"}),
}


def _lang_pm(x: Call) -> None:
    prog, args, v = x.prog, x.args, x.v
    ops = [a for a in args if not a.startswith("-")]
    sub = ops[0] if ops else None
    if not args or args[0] in ("--version", "-V", "version", "--help", "-h", "help"):
        return
    if sub in _LANG_SYSTEM_SUBCOMMANDS.get(prog, frozenset()):
        v.raise_to("system_mutation", f"{prog} {sub} changes machine-wide tools")
        return
    special = _LANG_SPECIAL.get(prog)
    if special is not None and special(sub, ops, args, v):
        return
    v.raise_to("process", f"{prog} {sub or ''} builds or runs code".replace("  ", " "))


def _pipx(sub: str | None, ops: list[str], args: list[str], v: _Verdict) -> bool:
    if sub not in ("list", "environment", "--version"):
        v.raise_to("system_mutation", f"pipx {sub} changes machine-wide tools")
    return True


def _dotnet(sub: str | None, ops: list[str], args: list[str], v: _Verdict) -> bool:
    if sub == "tool" and ops[1:2] and ops[1] in ("install", "update", "uninstall", "restore"):
        if "-g" in args or "--global" in args or ops[1] != "restore":
            v.raise_to("system_mutation", "dotnet tool changes machine-wide tools")
            return True
    return False


def _uv(sub: str | None, ops: list[str], args: list[str], v: _Verdict) -> bool:
    action = ops[1] if len(ops) > 1 else None
    if sub == "pip" and action in ("install", "uninstall", "sync"):
        if "--system" not in args:
            # into the active venv, usually the project's; still a package change the reviewer sees
            v.raise_to("system_mutation", "uv pip install changes installed packages")
            return True
    elif not (
        (sub == "tool" and action in ("install", "uninstall", "upgrade"))
        or (sub == "python" and action in ("install", "uninstall"))
    ):
        return False
    v.raise_to("system_mutation", f"uv {sub} {action} changes machine-wide tools")
    return True


def _poetry(sub: str | None, ops: list[str], args: list[str], v: _Verdict) -> bool:
    if sub == "self":
        v.raise_to("system_mutation", "poetry self changes the machine-wide tool")
        return True
    return False


def _composer(sub: str | None, ops: list[str], args: list[str], v: _Verdict) -> bool:
    if sub == "global":
        v.raise_to("system_mutation", "composer global changes machine-wide packages")
        return True
    return False


def _cargo(sub: str | None, ops: list[str], args: list[str], v: _Verdict) -> bool:
    if sub in ("publish", "login", "owner", "yank", "search"):
        v.raise_to("network", f"cargo {sub} talks to the registry")
        return True
    return False


def _go(sub: str | None, ops: list[str], args: list[str], v: _Verdict) -> bool:
    if sub == "env" and any(a in ("-w", "-u") for a in args):
        # `go env -w GOFLAGS=-toolexec=…` writes the go env file every later go command reads
        v.raise_to(MUTATION, "go env -w/-u writes the go environment file")
        return True
    return sub in ("env", "doc")


_LANG_SPECIAL: dict[str, Callable[[str | None, list[str], list[str], _Verdict], bool]] = {
    "pipx": _pipx,
    "dotnet": _dotnet,
    "uv": _uv,
    "poetry": _poetry,
    "composer": _composer,
    "cargo": _cargo,
    "go": _go,
}


# -- interpreters and build tools -----------------------------------------------------------


def _runs_programs(x: Call) -> None:
    if len(x.args) == 1 and x.args[0] in ("--version", "-V", "--help"):
        return
    x.v.raise_to("process", f"{x.prog} runs programs")


DEV_RULES: dict[str, Rule] = {
    **dict.fromkeys(("npm", "pnpm", "yarn", "bun", "cnpm"), _js_pm_rule),
    **dict.fromkeys(
        ("cargo", "go", "gem", "pipx", "dotnet", "uv", "poetry", "composer", "rustup", "deno"), _lang_pm
    ),
}

#: build tools, process control and interpreters run code; below every other table in priority
RUNS_PROGRAMS: dict[str, Rule] = dict.fromkeys(BUILD_TOOLS | PROCESS | INTERPRETERS, _runs_programs)

PATTERN_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = ((_PIP, _pip_rule), (_PYTHON, _python))
