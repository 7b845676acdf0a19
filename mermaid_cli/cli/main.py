"""The `mermaid` command tree. Flags only: everything else is imported lazily by the command that
needs it, so `mermaid --version` and `mermaid exec --help` stay fast (no httpx, SDK or rich)."""

from __future__ import annotations

import os
import sys
import types
from typing import Any

import click

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

from mermaid_cli import __version__

EXIT_HELP = """\b
Exit codes:
  0 success        1 failed (schema, verify, goal)   2 usage error
  3 blocked        4 limit reached                    5 provider error
  70 internal      124 timeout                        130/143 interrupted"""


class LazyGroup(click.Group):
    """Subcommands from other modules are imported only when invoked (keeps --version fast)."""

    lazy = {
        "mcp": ("mermaid_cli.cli.mcp", "mcp_group", "Manage MCP servers (add, remove, list, login)."),
        "checkpoints": (
            "mermaid_cli.cli.checkpoints",
            "checkpoints_command",
            "List the file checkpoints taken before mutations.",
        ),
        "login": (
            "mermaid_cli.cli.providers",
            "login_command",
            "Store a provider API key in the OS keyring.",
        ),
        "logout": (
            "mermaid_cli.cli.providers",
            "logout_command",
            "Remove a provider API key from the OS keyring.",
        ),
        "restore": (
            "mermaid_cli.cli.checkpoints",
            "restore_command",
            "Put files back as a checkpoint saved them.",
        ),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy:
            import importlib

            module, attr, _help = self.lazy[name]
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(n, h) for n, (_m, _a, h) in self.lazy.items()]
        for name in click.Group.list_commands(self, ctx):
            command = click.Group.get_command(self, ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(60)))
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


@click.group(
    cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, "-V", "--version", prog_name="mermaid", message="%(prog)s %(version)s")
def cli() -> None:
    """Mermaid: a headless coding agent for CI pipelines.

    One invocation runs one agent task, streams JSONL events on stdout (--json) and exits with a
    code a pipeline can trust. Start with `mermaid exec --help`.
    """


def _run_options(func: Any) -> Any:
    options = [
        click.argument("prompt", nargs=-1),
        click.option(
            "--json", "json_flag", is_flag=True, help="Stream JSONL events on stdout (= --format jsonl)."
        ),
        click.option(
            "-f",
            "--format",
            "output_format",
            type=click.Choice(["text", "json", "jsonl", "markdown", "ndjson"]),
            default=None,
            help="text: final answer; json: the result object; jsonl: every event; markdown. [default: text]",
        ),
        click.option(
            "-m", "--model", help="Model id provider/model, e.g. anthropic/claude-sonnet-4-5 or replay/FILE."
        ),
        click.option("--max-turns", type=click.IntRange(min=1), help="Stop with exit 4 after N model calls."),
        click.option(
            "--max-tokens", type=click.IntRange(min=1), help="Stop with exit 4 after N tokens (whole run)."
        ),
        click.option(
            "--max-cost",
            type=click.FloatRange(min=0, min_open=True),
            help="Stop with exit 4 after USD spent.",
        ),
        click.option(
            "--timeout",
            type=click.FloatRange(min=0, min_open=True),
            help="Whole-run wall clock in seconds (exit 124). [default: 1200]",
        ),
        click.option(
            "--resume", "resume", metavar="ID", help="Continue the session ID (exit 2 if it does not exist)."
        ),
        click.option(
            "--continue", "continue_", is_flag=True, help="Continue the newest session of this project."
        ),
        click.option(
            "--record",
            metavar="FILE",
            help="Record every model turn to FILE (replay with --model replay/FILE).",
        ),
        click.option(
            "-c",
            "--config",
            "config_overrides",
            multiple=True,
            metavar="KEY=VALUE",
            help="Config override, VALUE parsed as TOML (repeatable).",
        ),
        click.option("--profile", help="Apply [profiles.NAME] from the user config."),
        click.option(
            "-p", "--path", "path", metavar="DIR", help="Project directory (default: the current directory)."
        ),
        click.option("--system-prompt", help="Replace the system prompt."),
        click.option(
            "--system-prompt-file", metavar="FILE", help="Replace the system prompt with FILE's text."
        ),
        click.option("--append-system-prompt", help="Append text to the system prompt."),
        click.option(
            "--append-system-prompt-file", metavar="FILE", help="Append FILE's text to the system prompt."
        ),
        click.option("--output-last-message", metavar="FILE", help="Also write the final answer to FILE."),
        click.option(
            "--safety",
            type=click.Choice(["read_only", "ask", "auto", "full_access"]),
            help="Safety mode. [default: auto]",
        ),
        click.option("--policy", metavar="NAME|FILE", help="A policy preset from policies/ or a TOML file."),
        click.option(
            "--allow-untrusted-tools",
            is_flag=True,
            help="Let web, MCP and subagent calls through a headless ask.",
        ),
        click.option("--no-interactive", is_flag=True, help="Never prompt, even at a TTY."),
        click.option(
            "--no-network",
            is_flag=True,
            help="No web tools; network commands are denied (= -c safety.network=deny).",
        ),
        click.option(
            "--confine-fs",
            is_flag=True,
            help="Shell writes only inside the project (= -c safety.filesystem=project).",
        ),
        click.option(
            "--sandbox",
            type=click.Choice(["on", "off", "best-effort"]),
            is_flag=False,
            flag_value="on",
            default=None,
            help="Kernel sandbox: bare/on also confines full_access; best-effort warns when the kernel "
            "lacks it; off disables it (= -c sandbox.mode=...). Write --sandbox=VALUE before the prompt.",
        ),
        click.option(
            "--reasoning", type=click.Choice(["none", "low", "medium", "high"]), help="Reasoning depth."
        ),
        click.option(
            "--mask",
            "masks",
            multiple=True,
            metavar="VALUE",
            help="A secret to redact from all output (repeatable).",
        ),
        click.option("-q", "--quiet", is_flag=True, help="No progress on stderr."),
        click.option(
            "--output-schema",
            metavar="FILE",
            help="Shape the final answer as JSON valid against FILE (exit 1 if not).",
        ),
        click.option(
            "--verify",
            "verify",
            multiple=True,
            metavar="CMD",
            help="A command that must pass after the model finishes (repeatable).",
        ),
        click.option(
            "--verify-attempts",
            type=click.IntRange(0, 20),
            help="Extra rounds to fix a failing --verify. [default: 2]",
        ),
        click.option(
            "--diff-out", metavar="FILE", help="Write a unified diff of everything the run changed to FILE."
        ),
        click.option(
            "--mcp-prompt",
            metavar="SERVER/PROMPT",
            help="Use an MCP server's prompt as the task; PROMPT words become its arguments.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def options_from_params(params: dict[str, Any]) -> Any:
    """ExecOptions from the parsed click parameters of `exec`/`run`."""
    from mermaid_cli.run.runner import ExecOptions

    kwargs = dict(params)
    json_flag = kwargs.pop("json_flag")
    fmt = kwargs.pop("output_format")
    if fmt == "ndjson":
        fmt = "jsonl"
    if json_flag:
        if fmt not in (None, "jsonl"):
            raise click.UsageError("--json conflicts with --format " + fmt)
        fmt = "jsonl"
    kwargs["config_overrides"] = list(kwargs["config_overrides"])
    kwargs["masks"] = list(kwargs["masks"])
    kwargs["verify"] = list(kwargs["verify"])
    words = list(kwargs.pop("prompt") or ())
    if kwargs.get("mcp_prompt"):
        kwargs["prompt_args"] = words
        kwargs["prompt"] = None
    else:
        kwargs["prompt"] = " ".join(words) if words else None
    return ExecOptions(output_format=fmt or "text", **kwargs)


def _exec(kwargs: dict[str, Any]) -> None:
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
    _exit(code)


def _isatty(stream: Any) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):
        return False


def _exit(code: int) -> None:
    """Exit with `code`; if the reader closed stdout, don't let the final flush print a traceback."""
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError, OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(code)


@cli.command("exec", epilog=EXIT_HELP)
@_run_options
def exec_(**kwargs: Any) -> None:
    """Run one agent task headless.

    PROMPT is the task; with `-` or no PROMPT it is read from piped stdin, and a PROMPT plus
    piped stdin appends stdin as a fenced block.

    \b
    Examples:
      mermaid exec --json "fix the failing test"
      git diff | mermaid exec "review this diff" --safety read_only
      mermaid exec --model replay/fixtures/demo/hello.jsonl "create hello.txt containing hi"
    """
    _exec(kwargs)


@cli.command("run", epilog=EXIT_HELP)
@_run_options
def run_(**kwargs: Any) -> None:
    """Alias of `exec` (accepts -f ndjson, as the original Mermaid did)."""
    _exec(kwargs)


@cli.group()
def sessions() -> None:
    """List and inspect saved sessions of this project."""


@sessions.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("-p", "--path", "path", default=".", metavar="DIR", help="Project directory.")
def sessions_list(as_json: bool, path: str) -> None:
    """List sessions, oldest first."""
    import dataclasses
    import json
    from pathlib import Path

    from mermaid_cli.store.sessions import list_sessions

    rows = list_sessions(Path(path).resolve())
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(r) for r in rows], indent=2))
        return
    if not rows:
        click.echo("no sessions", err=True)
        return
    for r in rows:
        click.echo(f"{r.session_id}  {r.updated_at}  {r.messages:4d} msgs  {r.model}  {r.title}")


@sessions.command("show")
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="Print the messages as JSON.")
@click.option("-p", "--path", "path", default=".", metavar="DIR", help="Project directory.")
def sessions_show(session_id: str, as_json: bool, path: str) -> None:
    """Show the conversation of SESSION_ID."""
    import json
    from pathlib import Path

    from mermaid_cli.core.errors import UsageError
    from mermaid_cli.store.sessions import load_session

    try:
        data = load_session(Path(path).resolve(), session_id)
    except UsageError as exc:
        click.echo(f"mermaid: {exc.message}", err=True)
        sys.exit(2)
    for bad in data.bad_lines:
        click.echo(f"mermaid: skipped unreadable line {bad}", err=True)
    if as_json:
        payload = {
            "session_id": data.session_id,
            "model": data.started.get("model"),
            "messages": [m.model_dump(mode="json", exclude_none=True) for m in data.messages],
            "state": data.state,
            "bad_lines": data.bad_lines,
        }
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        return
    from mermaid_cli.core.types import ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock

    for msg in data.messages:
        for block in msg.content:
            if isinstance(block, ToolCallBlock):
                click.echo(f"[{msg.role}] tool call {block.name} {json.dumps(block.arguments)}")
            elif isinstance(block, ToolResultBlock):
                flag = " (error)" if block.is_error else ""
                click.echo(f"[tool result{flag}] {block.content[:500]}")
            elif isinstance(block, TextBlock | ReasoningBlock) and block.text:
                click.echo(f"[{msg.role}] {block.text}")


@cli.group("config")
def config_group() -> None:
    """Inspect the effective configuration."""


@config_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: each key with its value and source.")
@click.option("--profile", help="Apply [profiles.NAME].")
@click.option(
    "-c", "--config", "config_overrides", multiple=True, metavar="KEY=VALUE", help="Config override."
)
@click.option("-p", "--path", "path", default=".", metavar="DIR", help="Project directory.")
def config_show(as_json: bool, profile: str | None, config_overrides: tuple[str, ...], path: str) -> None:
    """Print the effective config and where each value came from."""
    import json
    from pathlib import Path

    from mermaid_cli.config.loader import effective_items, effective_toml, load_settings
    from mermaid_cli.core.errors import ConfigError

    try:
        loaded = load_settings(
            project_root=Path(path).resolve(), profile=profile, overrides=list(config_overrides)
        )
    except ConfigError as exc:
        click.echo(f"mermaid: {exc.message}", err=True)
        sys.exit(2)
    for warning in loaded.warnings:
        click.echo(f"mermaid: {warning}", err=True)
    if as_json:
        items = effective_items(loaded)
        click.echo(
            json.dumps(
                {"files": loaded.files, "settings": {k: {"value": v, "source": s} for k, v, s in items}},
                indent=2,
            )
        )
        return
    click.echo(effective_toml(loaded), nl=False)


@cli.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: {ok, checks: [{name, status, detail}]}.")
@click.option("-m", "--model", help="Check this model instead of the configured/default one.")
@click.option("--profile", help="Apply [profiles.NAME].")
@click.option(
    "-c", "--config", "config_overrides", multiple=True, metavar="KEY=VALUE", help="Config override."
)
@click.option("--mcp", "start_mcp", is_flag=True, help="Also start each MCP server and report its status.")
@click.option("-p", "--path", "path", default=".", metavar="DIR", help="Project directory.")
def doctor(
    as_json: bool,
    model: str | None,
    profile: str | None,
    config_overrides: tuple[str, ...],
    start_mcp: bool,
    path: str,
) -> None:
    """Check that a run would work here: config, model and key, safety, tools, MCP. Exit 1 if not."""
    import json
    from pathlib import Path

    from mermaid_cli.run.doctor import as_json as to_json
    from mermaid_cli.run.doctor import environ, render, run_checks

    checks = run_checks(
        Path(path).resolve(),
        environ(),
        profile=profile,
        overrides=list(config_overrides),
        model=model,
        start_mcp=start_mcp,
    )
    report = to_json(checks)
    click.echo(json.dumps(report, indent=2) if as_json else render(checks))
    sys.exit(0 if report["ok"] else 1)


def main() -> None:
    cli(prog_name="mermaid")


if __name__ == "__main__":  # pragma: no cover
    main()
