"""The overhead of a subagent spawn: time from the parent's request that asked for the `agent`
call to the child's first request reaching the server (assembly of the child run: settings,
registry, session, sandbox, system prompt), beside the same gap for a plain `glob` call.

    python bench/bench_subagent.py [--runs 5]

A real `mermaid exec --json` subprocess against the fake provider server (Anthropic Messages),
full_access. Printed: median gap for `agent` and for `glob`, and their difference (the spawn's
own cost). Target: spawn overhead <= 0.15 s. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "fixtures"))

from fake_provider import FakeProviderServer  # noqa: E402

TARGET_SECS = 0.15
USAGE = {"input_tokens": 100, "output_tokens": 10}


def _turn(*blocks: dict[str, object], stop: str = "tool_use") -> dict[str, object]:
    return {"type": "turn", "content": list(blocks), "stop_reason": stop, "usage": USAGE}


def _say(text: str) -> dict[str, object]:
    return _turn({"type": "text", "text": text}, stop="stop")


def _script(tool: str) -> list[dict[str, object]]:
    if tool == "agent":
        first = {
            "type": "tool_call",
            "id": "p1",
            "name": "agent",
            "arguments": {"prompt": "Say hi.", "description": "b"},
        }
        return [_turn(first), _say("hi"), _say("done")]
    first = {"type": "tool_call", "id": "p1", "name": "glob", "arguments": {"pattern": "*"}}
    return [_turn(first), _say("done")]


def gap(tool: str, home: Path) -> float:
    """Seconds between the first and second request the server received."""
    project = Path(tempfile.mkdtemp(prefix="bench-subagent-", dir=home))
    (project / "README.md").write_text("bench\n")
    with FakeProviderServer(_script(tool)) as server:
        env = {
            **os.environ,
            "ANTHROPIC_API_KEY": "sk-ant-bench-not-real-0000000000",
            "ANTHROPIC_BASE_URL": server.url,
            "MERMAID_CONFIG_DIR": str(home / "config"),
            "MERMAID_DATA_DIR": str(home / "data"),
            "MERMAID_NO_KEYRING": "1",
        }
        args = [sys.executable, "-m", "mermaid_cli", "exec", "--json", "-q", "--safety", "full_access"]
        args += ["--model", "anthropic/claude-sonnet-4-5", "go"]
        proc = subprocess.run(args, cwd=project, env=env, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0 or len(server.requests) < 2:
            raise SystemExit(f"run failed ({proc.returncode}): {proc.stderr[-2000:]}")
        return float(server.requests[1]["t_recv"]) - float(server.requests[0]["t_recv"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="bench-subagent-home-") as tmp:
        home = Path(tmp)
        gap("agent", home)  # warm the tool-spec cache and the import caches
        spawn = statistics.median(gap("agent", home) for _ in range(runs))
        plain = statistics.median(gap("glob", home) for _ in range(runs))
    print(f"time to the child's first request:  {spawn * 1000:7.1f} ms (median of {runs})")
    print(f"same gap for a glob call:           {plain * 1000:7.1f} ms")
    print(
        f"spawn overhead:                     {(spawn - plain) * 1000:7.1f} ms   target <= {TARGET_SECS * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
