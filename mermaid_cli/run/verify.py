"""`--verify`: the operator's commands, run after the model's answer under the same sandbox and
environment the model's commands get; a failure goes back to the model with its output, up to
`[verify] attempts` times, and one that still fails is a run error (exit 1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mermaid_cli.core import events as ev
from mermaid_cli.core.text import cap_text
from mermaid_cli.run.output import Output

if TYPE_CHECKING:
    from mermaid_cli.agent.state import RunStats
    from mermaid_cli.run.assemble import RunParts

FEEDBACK_OUTPUT_CHARS = 12_000
EVENT_OUTPUT_CHARS = 8192


@dataclass
class Failures:
    """One round's failing commands: (command, exit code), and each one's redacted output."""

    codes: list[tuple[str, int]] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)


async def verify_rounds(parts: RunParts, out: Output, stats: RunStats, run_errors: list[str]) -> RunStats:
    """Run the commands; while one fails and attempts are left, the model gets the failure and
    answers again. Returns the last round's stats; a command still failing joins `run_errors`."""
    commands = parts.settings.verify.commands
    attempts = parts.settings.verify.attempts
    if not commands or not stats.finished:
        return stats
    for attempt in range(1, attempts + 2):
        failures = await _round(parts, out, commands, attempt)
        if not failures.codes:
            break
        if attempt > attempts:
            for command, code in failures.codes:
                run_errors.append(f"verify: `{command}` still fails (exit {code}) after {attempt} attempts")
            break
        stats = await parts.agent.run(feedback(failures))
    return stats


async def _round(parts: RunParts, out: Output, commands: list[str], attempt: int) -> Failures:
    from mermaid_cli.tools.shell import run_command

    failures = Failures()
    for command in commands:
        out.info(f"verify (attempt {attempt}): {command}")
        outcome = await run_command(
            command,
            cwd=parts.project_root,
            env=parts.ctx.child_env or {},
            timeout=parts.settings.verify.timeout,
            on_line=out.progress_line,
            sandbox=parts.ctx.sandbox,  # the same confinement as the mode gives the model
        )
        code = outcome.exit_code if outcome.exit_code is not None else 1
        output = parts.redact(outcome.output)
        out.emit(
            ev.VerifyFinished(
                command=command, exit_code=code, attempt=attempt, output=_tail(output, EVENT_OUTPUT_CHARS)
            )
        )
        if code != 0:
            failures.codes.append((command, code))
            failures.outputs[command] = output
    return failures


def feedback(failures: Failures) -> str:
    """What the model is told after a failed round."""
    parts = ["The operator's verification failed after your last answer. Fix the problem, then answer again."]
    for command, code in failures.codes:
        output = _tail(failures.outputs.get(command, ""), FEEDBACK_OUTPUT_CHARS)
        parts.append(f"`{command}` exited with code {code}:\n```\n{output}\n```")
    return "\n\n".join(parts)


def _tail(text: str, limit: int) -> str:
    return cap_text(text, limit, head_share=0)
