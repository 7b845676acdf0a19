"""What a report shows, read from the files runs write.

A run's timeline needs times: events carry `ts` (ms since the run started). Events written before
`ts` existed get a timeline laid end to end from the tools' `duration_ms` and the run's total,
and the report says it is approximate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mermaid_cli.core.errors import UsageError
from mermaid_cli.run.batch.results import ResultsFile, TaskResult, read_results


@dataclass(frozen=True)
class Span:
    """A timed stretch of a run: a turn, a tool call or a verify command."""

    kind: str  # "turn" or "tool" or "verify"
    label: str
    start_ms: int
    end_ms: int
    status: str = "success"


@dataclass(frozen=True)
class TurnRow:
    """One model turn of a run report."""

    number: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    stop_reason: str | None
    duration_ms: int


@dataclass(frozen=True)
class ToolRow:
    """One tool's calls in a run report."""

    name: str
    calls: int
    errors: int
    denied: int
    total_ms: int


@dataclass
class RunReport:
    """What a run report shows of one session."""

    model: str = ""
    session_id: str = ""
    status: str = "unknown"
    exit_code: int | None = None
    duration_ms: int = 0
    total_tokens: int = 0
    cost_usd: float | None = None
    response: str = ""
    approximate: bool = False
    spans: list[Span] = field(default_factory=list)
    turns: list[TurnRow] = field(default_factory=list)
    tools: list[ToolRow] = field(default_factory=list)
    blocked: list[dict[str, Any]] = field(default_factory=list)
    verify: list[tuple[int, str, int]] = field(default_factory=list)  # attempt, command, exit code
    files_changed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    skipped_lines: int = 0


@dataclass
class BatchReport:
    """What a report shows of one batch."""

    results: ResultsFile
    spans: list[Span] = field(default_factory=list)


def load(path: Path) -> RunReport | BatchReport:
    """Read `path` as a batch results file, an events stream or a session file."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    first = next((raw for raw in text.splitlines() if raw.strip()), "")
    try:
        head = json.loads(first) if first else None
    except ValueError:
        head = None
    if isinstance(head, dict) and head.get("type") == "batch_header":
        return batch_report(read_results(path))
    events, skipped = _events(text)
    if not events:
        raise UsageError(f"{path}: no events (expected `mermaid exec --json` output or a session file)")
    report = run_report(events)
    report.skipped_lines = skipped
    return report


def _events(text: str) -> tuple[list[dict[str, Any]], int]:
    events: list[dict[str, Any]] = []
    skipped = 0
    for raw in text.splitlines():
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except ValueError:
            skipped += 1
            continue
        if isinstance(data, dict) and data.get("kind") == "event" and isinstance(data.get("event"), dict):
            data = data["event"]  # a session file line wraps the protocol event
        if isinstance(data, dict) and isinstance(data.get("type"), str):
            events.append(data)
        elif not (isinstance(data, dict) and "kind" in data):
            skipped += 1
    return events, skipped


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def run_report(events: list[dict[str, Any]]) -> RunReport:
    report = RunReport()
    timed = all("ts" in e for e in events if e["type"] in ("tool_started", "tool_finished", "turn_done"))
    report.approximate = not timed
    clock = 0  # the approximate clock, and the start of the current model turn
    turn_start = 0
    open_tools: dict[str, tuple[str, int]] = {}
    tools: dict[str, list[int]] = {}  # name -> [calls, errors, denied, total_ms]
    for event in events:
        kind = event["type"]
        ts = _int(event.get("ts"), clock)
        if kind == "session_started":
            report.model = str(event.get("model", ""))
            report.session_id = str(event.get("session_id", ""))
            turn_start = ts
        elif kind == "turn_done":
            end = ts if timed else clock + 1
            usage = event.get("usage") if isinstance(event.get("usage"), dict) else {}
            assert isinstance(usage, dict)
            number = len(report.turns) + 1
            report.turns.append(
                TurnRow(
                    number=number,
                    input_tokens=_int(usage.get("input_tokens")),
                    output_tokens=_int(usage.get("output_tokens")),
                    cost_usd=event.get("cost_usd")
                    if isinstance(event.get("cost_usd"), int | float)
                    else None,
                    stop_reason=event.get("stop_reason")
                    if isinstance(event.get("stop_reason"), str)
                    else None,
                    duration_ms=max(end - turn_start, 0),
                )
            )
            report.spans.append(Span("turn", f"turn {number}", turn_start, max(end, turn_start + 1)))
            clock = turn_start = end
        elif kind == "tool_started":
            open_tools[str(event.get("call_id"))] = (str(event.get("name", "?")), ts)
        elif kind == "tool_finished":
            name, started = open_tools.pop(str(event.get("call_id")), (str(event.get("name", "?")), ts))
            duration = _int(event.get("duration_ms"))
            end = ts if timed else clock + duration
            start = started if timed else clock
            status = str(event.get("status", "success"))
            decision = event.get("decision") if isinstance(event.get("decision"), dict) else {}
            assert isinstance(decision, dict)
            denied = decision.get("verdict") == "deny"
            row = tools.setdefault(name, [0, 0, 0, 0])
            row[0] += 1
            row[1] += status == "error" and not denied
            row[2] += denied
            row[3] += duration
            report.spans.append(
                Span("tool", name, start, max(end, start + 1), "denied" if denied else status)
            )
            clock = max(clock, end)
            turn_start = max(turn_start, end)
        elif kind == "verify_finished":
            report.verify.append(
                (_int(event.get("attempt")), str(event.get("command", "")), _int(event.get("exit_code")))
            )
        elif kind == "error":
            report.errors.append(str(event.get("message", "")))
        elif kind == "result":
            _take_result(report, event)
    report.tools = [ToolRow(name, *row) for name, row in sorted(tools.items(), key=lambda kv: -kv[1][0])]
    return report


def _take_result(report: RunReport, event: dict[str, Any]) -> None:
    report.status = str(event.get("status", "unknown"))
    report.exit_code = event.get("exit_code") if isinstance(event.get("exit_code"), int) else None
    report.duration_ms = _int(event.get("duration_ms"))
    report.total_tokens = _int(event.get("total_tokens"))
    cost = event.get("cost_usd")
    report.cost_usd = float(cost) if isinstance(cost, int | float) else None
    report.response = str(event.get("response") or "")
    blocked = event.get("blocked")
    report.blocked = [b for b in blocked if isinstance(b, dict)] if isinstance(blocked, list) else []
    files = event.get("files_changed")
    report.files_changed = [str(f) for f in files] if isinstance(files, list) else []
    errors = event.get("errors")
    if isinstance(errors, list):
        report.errors.extend(str(e) for e in errors if str(e) not in report.errors)


def batch_report(results: ResultsFile) -> BatchReport:
    spans = []
    cursor = 0
    for result in results.results:
        start = result.started_ms if result.started_ms is not None else cursor
        end = start + max(result.duration_ms, 1)
        if result.started:
            spans.append(Span("task", result.task_id, start, end, result.status))
        cursor = max(cursor, end)
    return BatchReport(results=results, spans=spans)


def task_cost(result: TaskResult) -> str:
    return "–" if result.cost_usd is None else f"${result.cost_usd:.4f}"
