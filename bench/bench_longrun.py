"""A 300-turn run against the fake provider: harness cost per turn, memory, request size.

    python bench/bench_longrun.py [--turns 300] [--window 50000]

`mermaid exec` runs as a subprocess against the fake Anthropic server (in this process, its own
thread). Every turn reads a 4 KB file; compaction summaries are answered by a `match` line. From
the server's receive/send timestamps: harness time per turn = next request received - previous
response sent (our loop, tools, events, session and request building; the model excluded).
Targets: <= 5 ms per turn at turn 300, RSS <= 60 MB and flat (turns 1/100/300 printed), request bytes bounded by the compaction
threshold rather than growing with the turn count. Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from provider_fixtures import FakeProviderServer  # noqa: E402

SUMMARY = (
    "## Goal\nread every data file\n## Decisions\nnone\n## Files touched\nnone\n## Open items\nkeep reading"
)


def script(turns: int) -> list[dict]:
    lines: list[dict] = [
        {
            "type": "match",
            "system_contains": "checkpoint summaries",
            "turn": {"content": [{"type": "text", "text": SUMMARY}], "stop_reason": "stop"},
        },
    ]
    for i in range(turns):
        call = {
            "type": "tool_call",
            "id": f"call_{i}",
            "name": "read_file",
            "arguments": {"path": f"data/f{i % 50}.txt"},
        }
        lines.append({"type": "turn", "content": [{"type": "text", "text": f"Reading file {i}."}, call]})
    lines.append(
        {"type": "turn", "content": [{"type": "text", "text": "All files read."}], "stop_reason": "stop"}
    )
    return lines


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--window", type=int, default=50_000, help="context window given to compaction")
    args = parser.parse_args()
    exe = shutil.which("mermaid") or sys.exit("mermaid is not on PATH (pip install -e .)")
    with tempfile.TemporaryDirectory(prefix="mermaid-longrun-") as tmp:
        project = Path(tmp) / "project"
        (project / "data").mkdir(parents=True)
        for i in range(50):
            (project / "data" / f"f{i}.txt").write_text((f"line {i} " + "x" * 60 + "\n") * 60)  # ~4 KB
        with FakeProviderServer(script(args.turns)) as server:
            env = dict(os.environ)
            env.update(
                MERMAID_CONFIG_DIR=str(Path(tmp) / "config"),
                MERMAID_DATA_DIR=str(Path(tmp) / "data"),
                ANTHROPIC_BASE_URL=server.url,
                ANTHROPIC_API_KEY="sk-bench-0000000000",
            )
            cmd = [
                exe,
                "exec",
                "--json",
                "--quiet",
                "--safety",
                "full_access",
                "--max-turns",
                str(args.turns + 10),
                "-c",
                f"compaction.context_window={args.window}",
                "--model",
                "anthropic/claude-sonnet-4-5",
                "read every data file",
            ]
            started = time.perf_counter()
            proc = subprocess.Popen(
                cmd,
                cwd=project,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
            )
            samples: list[tuple[int, int]] = []

            def sample() -> None:
                while proc.poll() is None:
                    samples.append((len(server.requests), rss_kb(proc.pid)))
                    time.sleep(0.02)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            out, err = proc.communicate()
            wall = time.perf_counter() - started
            sampler.join()
            requests = list(server.requests)
    result = json.loads(out.decode().splitlines()[-1])
    if result["exit_code"] != 0:
        sys.exit(f"run failed: {result['errors']}\n{err.decode()[-2000:]}")
    main_reqs = [r for r in requests if "checkpoint summaries" not in json.dumps(r["body"].get("system"))]
    compactions = len(requests) - len(main_reqs)
    gaps = []  # harness time between a response and the next main request
    for prev, cur in zip(requests, requests[1:], strict=False):
        if cur in main_reqs and "t_done" in prev:
            gaps.append(
                (
                    len([r for r in main_reqs if r["t_recv"] <= cur["t_recv"]]),
                    (cur["t_recv"] - prev["t_done"]) * 1000,
                )
            )
    sizes = [len(r["raw"]) for r in main_reqs]

    def window(lo: int, hi: int) -> list[float]:
        return [g for n, g in gaps if lo <= n <= hi]

    print(
        f"turns {result['num_turns']}, compactions {compactions}, wall {wall:.2f} s, tokens {result['total_tokens']}"
    )
    for lo, hi in ((2, 50), (125, 175), (args.turns - 49, args.turns + 1)):
        w = window(lo, hi)
        if w:
            print(
                f"harness ms/turn, turns {lo:>3}-{hi:<3}: median {statistics.median(w):5.2f}  p95 {sorted(w)[int(len(w) * 0.95) - 1]:5.2f}"
            )
    for n in (50, 150, args.turns):
        if n <= len(sizes):
            print(f"request bytes at turn {n:>3}: {sizes[n - 1]:>8}")
    print(f"request bytes max: {max(sizes)}  (window {args.window} tokens ~ {args.window * 4} bytes)")
    by_turn = {}
    for n, rss in samples:
        if rss:
            by_turn[n] = rss
    # issue 23: peak RSS <= 60 MB and flat: turn 300 within 10% of turn 100
    marks = {}
    for n in (1, 100, args.turns):
        near = [rss for k, rss in by_turn.items() if abs(k - n) <= 10]
        if near:
            marks[n] = max(near) / 1024
            print(f"RSS near request {n:>3}: {marks[n]:6.1f} MB   (target <= 60 MB, flat)")
    if 100 in marks and args.turns in marks:
        growth = marks[args.turns] / marks[100] - 1
        print(f"RSS growth turn 100 -> {args.turns}: {growth * 100:+.1f}%   (target: flat, <= +10%)")


if __name__ == "__main__":
    main()
