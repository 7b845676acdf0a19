"""Startup and demo-run benchmarks: wall time (median of N runs) and peak RSS.

Targets on the 2-core reference machine: `mermaid --version` <= 0.15 s, the replay demo <= 0.5 s,
peak RSS <= 80 MB. Prints numbers; asserts nothing (machines are noisy).

    python bench/bench_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo" / "hello.jsonl"


def measure(cmd: list[str], cwd: Path, runs: int) -> tuple[float, float]:
    """Median wall seconds and max peak RSS (MB) of `cmd` over `runs` runs."""
    times, peaks = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL
        )
        _, status, usage = os.wait4(proc.pid, 0)
        times.append(time.perf_counter() - t0)
        peaks.append(usage.ru_maxrss / 1024)  # KiB on Linux
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"command failed: {' '.join(cmd)}")
    return statistics.median(times), max(peaks)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    exe = shutil.which("mermaid") or sys.exit("mermaid is not on PATH (pip install -e .)")
    work = Path(tempfile.mkdtemp(prefix="mermaid-bench-"))
    rows = [
        ("mermaid --version", [exe, "--version"], 0.15),
        ("mermaid exec --help", [exe, "exec", "--help"], None),
        (
            "replay demo run",
            [exe, "exec", "--json", "--model", f"replay/{DEMO}", "create hello.txt containing hi"],
            0.5,
        ),
    ]
    print(f"{'what':<24}{'median s':>10}{'peak MB':>10}{'target s':>10}")
    for name, cmd, target in rows:
        wall, rss = measure(cmd, work, args.runs)
        print(f"{name:<24}{wall:>10.3f}{rss:>10.1f}{(f'{target:.2f}' if target else '-'):>10}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
