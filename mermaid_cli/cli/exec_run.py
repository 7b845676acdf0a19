"""Running `mermaid exec` once its flags are parsed, without click: `cli/main.py` (click) and the
fast path of `cli/entry.py` (`exec_args.parse`) both end here (issue 23)."""

from __future__ import annotations

import os
import sys
import types
from typing import Any

from mermaid_cli.cli import generated_code


class FlagConflict(ValueError):
    """Two flags that cannot go together (click reports it as a usage error)."""


def prepare_process() -> None:
    """What every Mermaid command needs before pydantic or httpx is imported."""
    # pydantic scans every installed distribution for plugins on first use; Mermaid uses none. The
    # runner removes the variable again once pydantic has looked, so child processes never see it.
    # httpx imports its own command-line entry point (rich, pygments, click) when imported; Mermaid never
    # runs it, so a stand-in spares every run that talks to a provider ~30 ms.
    if "httpx._main" not in sys.modules:
        _stub = types.ModuleType("httpx._main")
        _stub.main = lambda *args, **kwargs: None  # type: ignore[attr-defined]
        sys.modules["httpx._main"] = _stub
    if "PYDANTIC_DISABLE_PLUGINS" not in os.environ:
        os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"
        os.environ["_MERMAID_SET_PYDANTIC_PLUGINS"] = "1"
    # pydantic's plugin loader imports importlib.metadata (zipfile, shutil, email, csv) just to
    # look for plugins; with none to load, a stand-in that finds none spares that import too
    # (also when the switch came from the environment, e.g. a process that set it for itself)
    if os.environ["PYDANTIC_DISABLE_PLUGINS"] == "__all__" and "pydantic.plugin._loader" not in sys.modules:
        _no_plugins = types.ModuleType("pydantic.plugin._loader")
        _no_plugins.get_plugins = lambda: ()  # type: ignore[attr-defined]
        sys.modules["pydantic.plugin._loader"] = _no_plugins


def options_from_params(params: dict[str, Any]) -> Any:
    """ExecOptions from the parsed parameters of `exec`/`run` (click's, or `exec_args.parse`'s)."""
    from mermaid_cli.run.runner import ExecOptions

    kwargs = dict(params)
    json_flag = kwargs.pop("json_flag")
    fmt = kwargs.pop("output_format")
    if fmt in ("ndjson", "stream-json"):
        fmt = "jsonl"
    if json_flag:
        if fmt not in (None, "jsonl"):
            raise FlagConflict("--json conflicts with --format " + fmt)
        fmt = "jsonl"
    kwargs["config_overrides"] = list(kwargs["config_overrides"])
    kwargs["masks"] = list(kwargs["masks"])
    kwargs["verify"] = list(kwargs["verify"])
    for key in ("allowed_tools", "disallowed_tools", "add_dirs"):
        kwargs[key] = list(kwargs[key])
    words = list(kwargs.pop("prompt") or ())
    if kwargs.get("mcp_prompt"):
        kwargs["prompt_args"] = words
        kwargs["prompt"] = None
    else:
        kwargs["prompt"] = " ".join(words) if words else None
    return ExecOptions(output_format=fmt or "text", **kwargs)


def run_exec(kwargs: dict[str, Any]) -> None:
    """Run `exec` with its parsed parameters (click's, or `exec_args.parse`'s), then end the process."""
    from mermaid_cli.core import held_signals  # (not at the top: `--help` imports this module)

    real = _real_process()
    if real:  # SIGINT/SIGTERM from here on end the run with its `result` (core/held_signals.py)
        held_signals.hold()
    prestarted = _prestart_snapshot(kwargs)
    try:
        from mermaid_cli.cli.lazy_ssl import import_asyncio

        import_asyncio()  # without `ssl` until a TLS context is made: plain http never loads libssl
        if _real_process():  # (an in-process CliRunner call keeps pydantic as it is)
            from mermaid_cli.cli import kept_schemas

            kept_schemas.install()  # before the run's modules make their models
        from mermaid_cli.run.runner import RunIO, execute

        opts = options_from_params(kwargs)
        io = RunIO(
            stdin=sys.stdin,
            stdin_is_tty=_isatty(sys.stdin),
            stdout=sys.stdout.buffer,
            stderr=sys.stderr,
            stderr_is_tty=_isatty(sys.stderr),
        )
        code = execute(opts, io)
        if real:  # the loop gave the signals back their default actions; `result` is written
            held_signals.hold()
    finally:
        if prestarted:
            from mermaid_cli.run.workspace_diff import discard_prestart

            discard_prestart()  # the run ended before it took the snapshot
    exit_process(code)


def _real_process() -> bool:
    """This is a `mermaid` process of its own, not an in-process CliRunner call (whose stdout is
    not the process's)."""
    return sys.stdout is sys.__stdout__ and sys.stdout is not None


def _prestart_snapshot(kwargs: dict[str, Any]) -> bool:
    """Start the run's workspace snapshot now, before the run's modules load, so its `git` or
    `find` works on the other core meanwhile (issue 23). Only in a real process (not an
    in-process CliRunner call: its streams are not the process's)."""
    if not _real_process():
        return False
    stdout = sys.stdout
    from pathlib import Path

    from mermaid_cli.run.options import project_root
    from mermaid_cli.run.workspace_diff import own_files, prestart

    try:
        cwd = Path.cwd()
        root = project_root(cwd, kwargs.get("path"))
        if not root.is_dir():
            return False  # the run stops with a usage error
        names = (kwargs.get("record"), kwargs.get("diff_out"), kwargs.get("output_last_message"))
        prestart(root, own_files(root, cwd, names, stdout.buffer))
    except OSError:
        return False  # the run meets it itself
    return True


def _isatty(stream: Any) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):
        return False


def exit_process(code: int) -> None:
    """Exit with `code`; if the reader closed stdout, don't let the final flush print a traceback."""
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError, OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    if sys.stdout is sys.__stdout__ and sys.stderr is sys.__stderr__:  # a real process, not CliRunner
        # The run has closed what it opened; the interpreter's teardown (freeing every module) is
        # most of the exit's cost and nothing a caller can see (issue 23: exit <= 20 ms).
        try:
            if sys.stderr is not None:
                sys.stderr.flush()
        except (ValueError, OSError):
            pass
        generated_code.save()
        schemas = sys.modules.get("mermaid_cli.cli.kept_schemas")  # (imports pydantic: only if a run did)
        if schemas is not None:
            schemas.save()
        from mermaid_cli.cli import kept_modules

        kept_modules.save()
        from mermaid_cli.providers import early

        early.finish()
        os._exit(code)
    sys.exit(code)
