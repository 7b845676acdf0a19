"""`mermaid batch` throughput against the scripted (replay) provider: tasks per minute.

    python bench/bench_batch.py [--tasks 12]

A git repository with a few files; TASKS scripted tasks, each a real `mermaid exec --json` child
in its own worktree (write a file, answer). Printed for `--jobs 1, 2, 4`: wall time, tasks per
minute, and the speed-up over `--jobs 1`. Targets: --jobs 2 at least 1.6x and --jobs 4 at least
1.8x the --jobs 1 rate on a 2-core machine (a task is mostly Python start-up and git, so the
cores bound it); the per-task overhead of the batch itself (worktree, patch, bookkeeping) at most
0.3 s over a bare `mermaid exec`. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@bench"]


def make_repo(root: Path) -> None:
    root.mkdir()
    subprocess.run([*GIT, "init", "-q"], cwd=root, check=True)
    for i in range(50):
        (root / f"file{i}.txt").write_text(f"line {i}\n" * 20)
    subprocess.run([*GIT, "add", "."], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-qm", "base"], cwd=root, check=True)


def script(path: Path, name: str) -> Path:
    turns = [
        {
            "type": "header",
            "format": "mermaid-recording",
            "version": 1,
            "model": "anthropic/claude-sonnet-4-5",
        },
        {
            "type": "turn",
            "content": [
                {
                    "type": "tool_call",
                    "id": "c1",
                    "name": "write_file",
                    "arguments": {"path": name, "content": "x\n"},
                }
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 100, "output_tokens": 20},
        },
        {
            "type": "turn",
            "content": [{"type": "text", "text": "done"}],
            "stop_reason": "stop",
            "usage": {"input_tokens": 100, "output_tokens": 5},
        },
    ]
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=12)
    args = parser.parse_args()
    exe = shutil.which("mermaid") or sys.exit("mermaid is not on PATH (pip install -e .)")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env = {**os.environ, "MERMAID_CONFIG_DIR": str(tmp / "config"), "MERMAID_DATA_DIR": str(tmp / "data")}
        rows = [
            {
                "id": f"t{i}",
                "prompt": "write",
                "model": f"replay/{script(tmp / f's{i}.jsonl', f'out{i}.txt')}",
            }
            for i in range(args.tasks)
        ]
        tasks = tmp / "tasks.jsonl"
        tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))

        bare_repo = tmp / "bare"
        make_repo(bare_repo)
        started = time.perf_counter()
        for row in rows[:4]:
            subprocess.run(
                [exe, "exec", "--json", "--model", row["model"], "write"],
                cwd=bare_repo,
                env=env,
                capture_output=True,
                check=True,
            )
        bare = (time.perf_counter() - started) / 4

        rates: dict[int, float] = {}
        print(f"{args.tasks} tasks, scripted model")
        print(f"{'jobs':>5} {'wall s':>8} {'tasks/min':>10} {'speed-up':>9}")
        for jobs in (1, 2, 4):
            repo = tmp / f"repo{jobs}"
            make_repo(repo)
            started = time.perf_counter()
            out = subprocess.run(
                [exe, "batch", str(tasks), "--jobs", str(jobs), "--out", str(tmp / f"out{jobs}")],
                cwd=repo,
                env=env,
                capture_output=True,
                text=True,
            )
            wall = time.perf_counter() - started
            if out.returncode != 0:
                sys.exit(f"batch --jobs {jobs} failed (exit {out.returncode}):\n{out.stderr[-2000:]}")
            rates[jobs] = args.tasks / wall * 60
            speedup = rates[jobs] / rates[1]
            target = {1: "", 2: "  (target >= 1.6x)", 4: "  (target >= 1.8x)"}[jobs]
            print(f"{jobs:>5} {wall:>8.2f} {rates[jobs]:>10.1f} {speedup:>8.2f}x{target}")
        overhead = 60 / rates[1] - bare
        print(
            f"bare `mermaid exec` per task: {bare:.2f} s; batch overhead per task at --jobs 1: {overhead:.2f} s (target <= 0.3 s)"
        )


if __name__ == "__main__":
    main()
