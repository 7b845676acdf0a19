"""The `mermaid` console entry point: before the command tree (click, pydantic, asyncio) is imported,
a run that qualifies sends its first model request early (`providers/early.py`, issue 23).

A run qualifies when nothing but its flags, its prompt argument and the environment can shape its
first request, so that a recipe kept from an earlier run reproduces it exactly:

- `mermaid exec` with flags of `EARLY_PARAMS` only (none that names a file, a config layer, a
  session to resume, a recording or another directory, and none that carries free text such as
  `--append-system-prompt`: a recipe would keep it) and the prompt as arguments, not a
  `/command` (those expand before they are sent);
- stdin a terminal, `/dev/null` or closed (piped text would join the prompt);
- no proxy variable (proxied requests go through httpx);
- the project is the current directory (no git repository above it), and it has no `.mermaid`
  directory and no `AGENTS.md`, `CLAUDE.md` or `MERMAID.md`;
- the user's config directory is absent or empty, and the data directory holds no memory and no
  plugin lock.

Everything else runs exactly as before. Any error here only means the run sends normally.
"""

from __future__ import annotations

import os
import stat
import sys

from mermaid_cli.config.dirs import data_path, user_config_path

TYPE_CHECKING = False  # not typing's: this module runs before anything else is imported
if TYPE_CHECKING:
    from mermaid_cli.providers import early

#: the `exec` parameters (`cli/exec_args.PARAMS`) that shape a first request only through their
#: literal value (part of the recipe key)
EARLY_PARAMS = frozenset(
    {
        "output_format",
        "model",
        "max_turns",
        "max_tokens",
        "max_cost",
        "timeout",
        "safety",
        "allowed_tools",
        "disallowed_tools",
        "reasoning",
        "json_flag",
        "ephemeral",
        "allow_untrusted_tools",
        "no_interactive",
        "plain",
        "no_network",
        "confine_fs",
        "quiet",
    }
)
#: the collector's thresholds for a Mermaid process. The default (a young collection every 700
#: allocations) ran ~100 collections during a 3-turn run's imports and set-up, ~2% of its
#: instructions, and found a few hundred cyclic objects; every 20,000 it runs ~10 and finds the
#: same ones (issue 23).
GC_THRESHOLDS = (20_000, 20, 100)
#: click's shell-completion switch for `mermaid`: a completion request goes to click
COMPLETION_VARIABLE = "_MERMAID_COMPLETE"
PROJECT_INPUTS = (".mermaid", "AGENTS.md", "CLAUDE.md", "MERMAID.md")
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def split_argv(argv: list[str]) -> tuple[list[str], str] | None:
    """(the flags, in order, with their values; the prompt) of a plain `exec`, else None."""
    if not argv or argv[0] != "exec":
        return None
    from mermaid_cli.cli.exec_args import PARAMS  # (typing: only an `exec` needs it)

    early = [p for p in PARAMS if p.name in EARLY_PARAMS]
    bare_flags = {opt for p in early if p.kind == "flag" for opt in p.opts}
    value_flags = {opt for p in early if p.kind != "flag" for opt in p.opts}
    flags: list[str] = []
    words: list[str] = []
    tokens = iter(argv[1:])
    for token in tokens:
        if token == "--":
            words.extend(tokens)
            break
        if token.startswith("-") and token != "-":
            name, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
            if name not in bare_flags | value_flags or (eq and name in bare_flags):
                return None  # (click reads `-m=x` as the value `=x`: short flags take no `=`)
            if name in value_flags and not eq:
                value = next(tokens, None)  # type: ignore[assignment]
                if value is None:
                    return None
            flags += [name, value] if name in value_flags else [name]
        else:
            words.append(token)
    prompt = " ".join(words)
    if not prompt.strip() or prompt == "-" or prompt.lstrip().startswith("/"):
        return None  # empty, from stdin, or a `/command` that expands before it is sent
    return flags, prompt


def _stdin_is_quiet() -> bool:
    """A terminal, /dev/null or no stdin at all: nothing piped that would join the prompt."""
    try:
        st = os.fstat(0)
    except OSError:
        return True
    if os.isatty(0):
        return True
    if stat.S_ISCHR(st.st_mode):
        try:
            null = os.stat(os.devnull)
        except OSError:
            return False
        return st.st_rdev == null.st_rdev
    return False


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _absent_or_empty(path: str) -> bool:
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _plain_project(cwd: str) -> bool:
    for name in PROJECT_INPUTS:
        if os.path.lexists(os.path.join(cwd, name)):
            return False
    parent = os.path.dirname(cwd)
    while parent and parent != cwd:  # a repository above would make its top the project root
        if os.path.lexists(os.path.join(parent, ".git")):
            return False
        cwd, parent = parent, os.path.dirname(parent)
    return True


def plan_early(argv: list[str], env: dict[str, str]) -> early.Plan | None:
    """The early-request plan for this invocation, or None when it does not qualify."""
    if env.get("MERMAID_NO_EARLY_REQUEST", "").strip() not in ("", "0"):
        return None
    split = split_argv(argv)
    if split is None or not _stdin_is_quiet():
        return None
    flags, prompt = split
    if any(env.get(name) or env.get(name.upper()) for name in PROXY_VARIABLES):
        return None
    cwd = os.path.realpath(os.getcwd())
    if not _plain_project(cwd):
        return None
    if "--ephemeral" not in flags and not os.access(cwd, os.W_OK):
        return None  # the run would stop before its first request: its session file has no place
    if not _absent_or_empty(user_config_path(env)):
        return None
    data = data_path(env)
    if os.path.lexists(os.path.join(data, "memory")) or os.path.lexists(
        os.path.join(data, "plugins.lock.json")
    ):
        return None
    from mermaid_cli.providers import early  # only now: `mermaid --version` needs none of it

    ttys = (_isatty(0), _isatty(1), _isatty(2))
    key = early.key_for(["exec", *flags], env, ttys, git=os.path.lexists(os.path.join(cwd, ".git")))
    return early.Plan(key, cwd, prompt, env, env.get("MERMAID_EARLY_REQUEST_STORE") or early.STORE)


def _reopen_closed_streams() -> None:
    """`2>&-` or `>&-`: Python then has no sys.stderr/sys.stdout (None), and the first progress
    note (or the `result` line) failed with AttributeError, so the run ended with exit 1 and no
    `result`. A closed stream is /dev/null instead: what would go there is lost, the run is not."""
    for name in ("stdin", "stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "r" if name == "stdin" else "w", encoding="utf-8"))  # noqa: SIM115


def main() -> None:
    import gc

    _reopen_closed_streams()
    gc.set_threshold(*GC_THRESHOLDS)
    is_exec = sys.argv[1:2] == ["exec"]
    if is_exec:
        # no collection until the set-up is over: those ~10 still cost ~2.5% of a 3-turn run's
        # instructions, walking modules and classes that live as long as the run, which `Run`
        # then freezes out of the collector (gc.freeze) before it enables it again
        gc.disable()
        from mermaid_cli.core import held_signals

        held_signals.hold()  # a signal from here on ends the run with its `result`, not mid-import
    from mermaid_cli.cli import kept_modules

    kept_modules.install()  # every module imported from here on may come from the kept code
    try:
        plan = plan_early(sys.argv[1:], dict(os.environ))
        if plan is not None:
            import atexit

            from mermaid_cli.providers import early

            early.begin(plan)
            atexit.register(early.finish)
    except Exception:  # an optimisation: the run itself reports any real problem
        pass
    if is_exec and COMPLETION_VARIABLE not in os.environ:
        _exec_without_click(sys.argv[1:])
    from mermaid_cli.cli.main import main as run

    run()


def _exec_without_click(argv: list[str]) -> None:
    """Run a plain `exec` without importing click (`cli/exec_args.py`); return if it is not one."""
    from mermaid_cli.cli import generated_code

    # before the modules below make their named tuples and dataclasses
    generated_code.install(generated_code.kept_file(argv))
    from mermaid_cli.cli.exec_args import parse

    kwargs = parse(argv)
    if kwargs is None:
        return
    from mermaid_cli.cli.exec_run import prepare_process, run_exec

    prepare_process()
    try:
        run_exec(kwargs)  # ends the process
    except KeyboardInterrupt:  # before the run could install its signal handlers
        sys.stderr.write("mermaid: interrupted\n")
        sys.stderr.flush()
        os._exit(130)
