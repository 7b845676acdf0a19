"""The `mermaid` command tree. Flags only: everything else is imported lazily by the command that
needs it, so `mermaid --version` and `mermaid exec --help` stay fast (no httpx, SDK or rich)."""

from __future__ import annotations

import sys
from typing import Any

import click

from mermaid_cli import __version__
from mermaid_cli.cli import generated_code
from mermaid_cli.cli.exec_run import FlagConflict, prepare_process, run_exec
from mermaid_cli.cli.peer_flags import ExecCommand, MermaidGroup, reject_p

prepare_process()  # before any command imports pydantic or httpx

EXIT_HELP = """\b
Exit codes:
  0 success        1 failed (schema, verify, goal)   2 usage error
  3 blocked        4 limit reached                    5 provider error
  70 internal      124 timeout                        130/143 interrupted"""


@click.group(
    cls=MermaidGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
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
            "--output-format",
            "output_format",
            type=click.Choice(["text", "json", "jsonl", "markdown", "ndjson", "stream-json"]),
            default=None,
            help=(
                "text: final answer; json: the result object; jsonl (= ndjson, stream-json): every event;"
                " markdown. [default: text]"
            ),
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
            "--path", "path", metavar="DIR", help="Project directory (default: the current directory)."
        ),
        # peers spell the prompt `-p "task"`: reject it with a hint rather than take it as a path
        click.option("-p", "rejected_p", hidden=True, expose_value=False, callback=reject_p),
        click.option("--system-prompt", help="Replace the system prompt."),
        click.option(
            "--system-prompt-file", metavar="FILE", help="Replace the system prompt with FILE's text."
        ),
        click.option("--append-system-prompt", help="Append text to the system prompt."),
        click.option(
            "--append-system-prompt-file", metavar="FILE", help="Append FILE's text to the system prompt."
        ),
        click.option(
            "-o", "--output-last-message", metavar="FILE", help="Also write the final answer to FILE."
        ),
        click.option(
            "--ephemeral",
            is_flag=True,
            help="Write no session file (the run cannot be resumed or continued).",
        ),
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
        click.option(
            "--allowed-tools",
            "--allowedTools",
            "allowed_tools",
            multiple=True,
            metavar="TOOL[(PATTERN)]",
            help="Pre-approve calls no config rule decides, e.g. read_file or 'execute_command(git *)'"
            " (repeatable, comma-separated; peers' Bash/Read/Edit… names accepted).",
        ),
        click.option(
            "--disallowed-tools",
            "--disallowedTools",
            "disallowed_tools",
            multiple=True,
            metavar="TOOL[(PATTERN)]",
            help="Deny these calls whatever the config allows, e.g. web_fetch or 'Bash(git push:*)' (repeatable).",
        ),
        click.option(
            "--add-dir",
            "add_dirs",
            multiple=True,
            metavar="DIR",
            help="An extra directory tools and the sandbox treat as inside the project (repeatable).",
        ),
        click.option("--no-interactive", is_flag=True, help="Never prompt, even at a TTY."),
        click.option("--plain", is_flag=True, help="Plain progress lines on stderr, even at a terminal."),
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


def _run(kwargs: dict[str, Any]) -> None:
    try:
        run_exec(kwargs)
    except FlagConflict as exc:
        raise click.UsageError(str(exc)) from None


@cli.command("exec", cls=ExecCommand, epilog=EXIT_HELP)
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
    _run(kwargs)


@cli.command("run", cls=ExecCommand, epilog=EXIT_HELP)
@_run_options
def run_(**kwargs: Any) -> None:
    """Alias of `exec` (accepts -f ndjson, as the original Mermaid did)."""
    _run(kwargs)


def main() -> None:
    # before the commands' modules make their dataclasses
    generated_code.install(generated_code.kept_file(sys.argv[1:]))
    cli(prog_name="mermaid")


if __name__ == "__main__":  # pragma: no cover
    main()
