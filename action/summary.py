"""Turn a `mermaid exec --json` event log into GitHub Actions outputs, a step summary and annotations.

Stdlib only: it runs in the action's private virtualenv or any python3, and tests run it directly.

    python summary.py --events FILE --exit-code N [--error MSG] [--diff-file PATH]

Writes `name<<DELIM` … `DELIM` blocks to $GITHUB_OUTPUT (a random delimiter that does not occur in
the value), Markdown to $GITHUB_STEP_SUMMARY, and `::error`/`::warning` workflow commands to
stdout. Every value written anywhere has the provider keys replaced by `***` first: the model's text
is untrusted and GitHub only masks the log, not the outputs file.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATUS_BY_CODE = {
    0: "success",
    1: "failed",
    2: "usage_error",
    3: "blocked",
    4: "limit",
    5: "provider_error",
    70: "internal_error",
    124: "timeout",
    130: "interrupted",
    143: "interrupted",
}
ICONS = {
    "success": "✅",
    "failed": "❌",
    "usage_error": "⚠️",
    "blocked": "⛔",
    "limit": "🛑",
    "provider_error": "🔌",
    "internal_error": "💥",
    "timeout": "⌛",
    "interrupted": "✋",
}
# GitHub caps a step summary at 1 MiB and outputs at about 1 MiB per job: keep well inside both.
RESPONSE_OUTPUT_CAP = 512 * 1024
RESPONSE_SUMMARY_CAP = 64 * 1024
VERIFY_OUTPUT_CAP = 4 * 1024
SECRET_ENV = ("INPUT_ANTHROPIC_API_KEY", "INPUT_OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")
MIN_SECRET_LEN = 4  # masking "a" would shred every value; GitHub-issued secrets are far longer


@dataclass
class Run:
    """What the event log says about one run."""

    events: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None
    started: dict[str, Any] | None = None
    unparsed_lines: int = 0


def read_events(path: Path | None) -> Run:
    run = Run()
    if path is None or not path.is_file():
        return run
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                run.unparsed_lines += 1
                continue
            if not isinstance(obj, dict):
                run.unparsed_lines += 1
                continue
            run.events.append(obj)
            if obj.get("type") == "result":
                run.result = obj
            elif obj.get("type") == "session_started" and run.started is None:
                run.started = obj
    return run


class Redactor:
    def __init__(self, env: dict[str, str]) -> None:
        values: set[str] = set()
        for name in SECRET_ENV:
            for line in env.get(name, "").splitlines():
                line = line.strip()
                if len(line) >= MIN_SECRET_LEN:
                    values.add(line)
        # Longest first, so a key that contains another key is replaced whole.
        self._values = sorted(values, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for value in self._values:
            text = text.replace(value, "***")
        return text


def cap(text: str, limit: int, note: str) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n\n[… truncated: {len(text) - limit} more characters; {note}]"


# --- GitHub file formats -------------------------------------------------------------------------


def output_block(name: str, value: str) -> str:
    """One `name<<DELIM` block in GitHub's multi-line format; DELIM never occurs in the value."""
    while True:
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
        if delimiter not in value and delimiter not in name:
            return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, title: str, message: str) -> str:
    """A workflow command on one line: newlines are escaped so model text cannot start a command."""
    return f"::{level} title={_escape_property(title)}::{_escape_data(message)}"


def md_cell(value: Any) -> str:
    text = " ".join(str(value).split())
    return text.replace("\\", "\\\\").replace("|", "\\|")


def md_code(value: Any) -> str:
    text = " ".join(str(value).split())
    if not text:
        return ""
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text.replace('|', chr(92) + '|')}{pad}{fence}"


def md_fence(text: str, lang: str = "") -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{lang}\n{text}\n{fence}"


# --- what happened ---------------------------------------------------------------------------------


@dataclass
class ToolCount:
    calls: int = 0
    errors: int = 0


def tool_counts(events: Iterable[dict[str, Any]]) -> dict[str, ToolCount]:
    names: dict[str, str] = {}
    counts: dict[str, ToolCount] = {}
    for event in events:
        kind = event.get("type")
        if kind == "tool_started":
            names[str(event.get("call_id"))] = str(event.get("name") or "?")
        elif kind == "tool_finished":
            name = str(event.get("name") or names.get(str(event.get("call_id")), "?"))
            count = counts.setdefault(name, ToolCount())
            count.calls += 1
            if event.get("status") != "success":
                count.errors += 1
    return counts


def verify_runs(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e.get("type") == "verify_finished"]


def final_verify(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The last run of each verify command (its verdict)."""
    last: dict[str, dict[str, Any]] = {}
    for run in runs:
        last[str(run.get("command"))] = run
    return last


def fmt_cost(cost: Any) -> str:
    if isinstance(cost, int | float):
        return f"${cost:.4f}"
    return "unknown"


# --- the three products ------------------------------------------------------------------------------


@dataclass
class Outcome:
    exit_code: int
    status: str
    run: Run
    error: str | None
    events_file: Path | None
    diff_file: Path | None
    artifact_name: str

    @property
    def result(self) -> dict[str, Any]:
        return self.run.result or {}

    @property
    def session_id(self) -> str:
        sid = self.result.get("session_id") or (self.run.started or {}).get("session_id")
        return str(sid or "")

    def errors(self) -> list[str]:
        errors = [str(e) for e in self.result.get("errors") or []]
        if self.error:
            errors.insert(0, self.error)
        if self.run.result is None and self.error is None:
            errors.append(
                f"mermaid exited {self.exit_code} without a result event (see the step log for its stderr)"
            )
        return errors


def outputs(outcome: Outcome) -> dict[str, str]:
    result = outcome.result
    structured = result.get("structured_output")
    cost = result.get("cost_usd")
    return {
        "exit-code": str(outcome.exit_code),
        "status": outcome.status,
        "session-id": outcome.session_id,
        "response": cap(
            str(result.get("response") or ""), RESPONSE_OUTPUT_CAP, "the full answer is in the events file"
        ),
        "structured-output": ""
        if structured is None
        else json.dumps(structured, ensure_ascii=False, separators=(",", ":")),
        "cost-usd": "" if cost is None else str(cost),
        "files-changed": "\n".join(str(p) for p in result.get("files_changed") or []),
        "diff-file": str(outcome.diff_file) if outcome.diff_file and outcome.diff_file.is_file() else "",
        "events-file": str(outcome.events_file)
        if outcome.events_file and outcome.events_file.is_file()
        else "",
        "artifact-name": outcome.artifact_name,
    }


def annotations(outcome: Outcome) -> list[str]:
    lines: list[str] = []
    runs = verify_runs(outcome.run.events)
    final = final_verify(runs)
    for command, run in final.items():
        attempts = [r for r in runs if str(r.get("command")) == command]
        if run.get("exit_code") != 0:
            lines.append(
                annotation(
                    "error",
                    "Mermaid verify failed",
                    f"{command} exited {run.get('exit_code')} (attempt {run.get('attempt')})",
                )
            )
        elif any(r.get("exit_code") != 0 for r in attempts):
            lines.append(
                annotation(
                    "warning",
                    "Mermaid verify passed after a retry",
                    f"{command} failed first and passed on attempt {run.get('attempt')}",
                )
            )
    level = "error" if outcome.status == "blocked" else "warning"
    for item in outcome.result.get("blocked") or []:
        item = item if isinstance(item, dict) else {"reason": str(item)}
        lines.append(
            annotation(
                level,
                "Mermaid blocked a tool call",
                f"{item.get('tool', '?')} ({item.get('call_id', '?')}): {item.get('reason') or 'no reason given'}",
            )
        )
    if outcome.exit_code != 0:
        errors = outcome.errors()
        detail = f": {errors[-1]}" if errors else ""
        lines.append(annotation("error", "Mermaid", f"{outcome.status} (exit {outcome.exit_code}){detail}"))
    return lines


def summary(outcome: Outcome) -> str:
    result = outcome.result
    started = outcome.run.started or {}
    out: list[str] = []
    icon = ICONS.get(outcome.status, "❔")
    out.append(f"## {icon} Mermaid: {outcome.status} (exit {outcome.exit_code})\n")
    rows: list[tuple[str, str]] = [("Status", f"`{outcome.status}`"), ("Exit code", f"`{outcome.exit_code}`")]
    if outcome.session_id:
        rows.append(("Session", md_code(outcome.session_id)))
    if started.get("model"):
        rows.append(("Model", md_code(started["model"])))
    if started.get("safety_mode"):
        rows.append(("Safety", md_code(started["safety_mode"])))
    if started.get("policy_digest"):
        rows.append(("Policy digest", md_code(str(started["policy_digest"])[:16])))
    if result:
        rows.append(("Turns", str(result.get("num_turns", "?"))))
        rows.append(("Cost", fmt_cost(result.get("cost_usd"))))
        rows.append(("Tokens", str(result.get("total_tokens", "?"))))
        rows.append(("Tool calls", f"{result.get('tool_calls', 0)} ({result.get('tool_errors', 0)} errors)"))
        if isinstance(result.get("duration_ms"), int | float):
            rows.append(("Duration", f"{result['duration_ms'] / 1000:.1f} s"))
    out.append("| | |\n|---|---|")
    out.extend(f"| {k} | {v} |" for k, v in rows)
    out.append("")

    counts = tool_counts(outcome.run.events)
    if counts:
        out.append("### Tools run\n\n| Tool | Calls | Errors |\n|---|---:|---:|")
        out.extend(f"| {md_code(name)} | {c.calls} | {c.errors} |" for name, c in sorted(counts.items()))
        out.append("")

    files = result.get("files_changed") or []
    if files:
        out.append(f"### Files changed ({len(files)})\n")
        out.extend(f"- {md_code(p)}" for p in files)
        out.append("")

    blocked = result.get("blocked") or []
    if blocked:
        out.append(f"### Blocked calls ({len(blocked)})\n\n| Call | Tool | Reason |\n|---|---|---|")
        for item in blocked:
            item = item if isinstance(item, dict) else {"reason": str(item)}
            out.append(
                f"| {md_code(item.get('call_id', ''))} | {md_code(item.get('tool', ''))} "
                f"| {md_cell(item.get('reason') or '')} |"
            )
        out.append("")

    runs = verify_runs(outcome.run.events)
    if runs:
        out.append("### Verify\n\n| Command | Attempt | Exit code | |\n|---|---:|---:|---|")
        for run in runs:
            ok = run.get("exit_code") == 0
            out.append(
                f"| {md_code(run.get('command', ''))} | {run.get('attempt', '')} "
                f"| {run.get('exit_code', '')} | {'✅' if ok else '❌'} |"
            )
        out.append("")
        for command, run in final_verify(runs).items():
            if run.get("exit_code") != 0 and run.get("output"):
                text = cap(str(run["output"]), VERIFY_OUTPUT_CAP, "see the events file")
                out.append(
                    f"<details><summary>Output of {md_code(command)}</summary>\n\n{md_fence(text)}\n\n</details>\n"
                )

    errors = outcome.errors()
    if errors:
        out.append("### Errors\n")
        out.extend(f"- {md_cell(e)}" for e in errors)
        out.append("")

    response = str(result.get("response") or "")
    if response:
        text = cap(response, RESPONSE_SUMMARY_CAP, "the full answer is in the response output")
        out.append(
            f"<details open><summary>Final answer</summary>\n\n{md_fence(text, 'markdown')}\n\n</details>\n"
        )
    if result.get("structured_output") is not None:
        text = json.dumps(result["structured_output"], ensure_ascii=False, indent=2)
        out.append(
            f"<details><summary>Structured output</summary>\n\n"
            f"{md_fence(cap(text, RESPONSE_SUMMARY_CAP, 'see the structured-output output'), 'json')}\n\n</details>\n"
        )
    if outcome.run.unparsed_lines:
        out.append(f"_{outcome.run.unparsed_lines} line(s) of the event log were not JSON objects._\n")
    if outcome.events_file and outcome.events_file.is_file():
        out.append(
            f"Event log: {md_code(outcome.events_file)} (artifact {md_code(outcome.artifact_name)} when `upload-events` is on)\n"
        )
    return "\n".join(out) + "\n"


def artifact_name(env: dict[str, str], session_id: str) -> str:
    suffix = session_id or secrets.token_hex(4)
    job = "".join(c if c.isalnum() or c in "-_." else "-" for c in env.get("GITHUB_JOB", ""))
    return "-".join(p for p in ("mermaid-events", job, suffix) if p)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=Path, help="the JSONL file mermaid wrote")
    parser.add_argument("--exit-code", type=int, required=True, help="mermaid's exit code")
    parser.add_argument("--error", help="an error found before mermaid ran")
    parser.add_argument("--diff-file", type=Path, help="the --diff-out path, if any")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    redact = Redactor(env)

    run = read_events(args.events)
    status = str((run.result or {}).get("status") or STATUS_BY_CODE.get(args.exit_code, "failed"))
    if args.exit_code == 0 and run.result is None:
        status = "failed"  # no result line: nothing trustworthy to report, whatever the code says
    outcome = Outcome(
        exit_code=args.exit_code,
        status=status,
        run=run,
        error=args.error,
        events_file=args.events.resolve() if args.events else None,
        diff_file=args.diff_file,
        artifact_name="",
    )
    outcome.artifact_name = artifact_name(env, outcome.session_id)

    for line in annotations(outcome):
        print(redact(line), flush=True)
    if env.get("GITHUB_OUTPUT"):
        with open(env["GITHUB_OUTPUT"], "a", encoding="utf-8") as fh:
            for name, value in outputs(outcome).items():
                fh.write(output_block(name, redact(value)))
    if env.get("GITHUB_STEP_SUMMARY"):
        with open(env["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as fh:
            fh.write(redact(summary(outcome)))
            fh.write(redact(timeline(args.events, env)))
    return 0


def timeline(events: Path | None, env: dict[str, str]) -> str:
    """The run's gantt timeline from `mermaid report` (GitHub draws the block), folded away under
    the summary; nothing when mermaid or the events file is missing or the report fails."""
    import subprocess

    binary = env.get("MERMAID_BIN")
    if not binary or events is None or not events.is_file():
        return ""
    try:
        report = subprocess.run(
            [binary, "report", str(events)], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    if report.returncode != 0 or "```mermaid" not in report.stdout:
        return ""
    start = report.stdout.index("```mermaid")
    end = report.stdout.index("```", start + 3) + 3
    return f"\n<details><summary>Timeline</summary>\n\n{report.stdout[start:end]}\n\n</details>\n"


if __name__ == "__main__":
    sys.exit(main())
