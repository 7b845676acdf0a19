"""`mermaid exec` end to end against the fake provider server: what a pipeline step pays.

    python bench/bench_exec.py [--runs 5]

For Anthropic Messages, OpenAI Responses and an OpenAI-compatible Chat Completions provider, the
three-turn task of bench_providers.py (shell `ls`, write a file, answer) runs as a real `mermaid
exec --json` subprocess with the full tool set. Printed per provider (median of the runs):
whole-run wall time, time from launch to the first request reaching the server, bytes of the
first request (system prompt + tools), and the share of turns after the first whose request prefix
is byte-identical to the previous turn's (cacheable). Targets: run <= 0.6 s, first request
<= 0.35 s, first request <= 16 KB, 100% stable prefix. Nothing is asserted.
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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_providers import SCRIPT, start_server  # noqa: E402

from mermaid_cli.providers.http import split_last_item  # noqa: E402

CASES = [
    ("anthropic", "anthropic/claude-sonnet-4-5", "messages"),
    ("openai responses", "openai/gpt-5", "input"),
    ("chat (compatible)", "local/bench-model", "messages"),
]


def one_run(model: str, key: str, tmp: Path, n: int) -> dict[str, float]:
    script = tmp / f"script-{n}.jsonl"
    script.write_text("".join(json.dumps(x) + "\n" for x in SCRIPT))
    log = tmp / f"log-{n}.jsonl"
    proc, url = start_server(script, log)
    project = tmp / f"project-{n}"
    project.mkdir()
    config = tmp / f"config-{n}"
    config.mkdir()
    (config / "config.toml").write_text(f'[providers.local]\nbase_url = "{url}/v1"\napi = "chat"\n')
    env = dict(os.environ)
    env.update(
        MERMAID_CONFIG_DIR=str(config),
        MERMAID_DATA_DIR=str(tmp / "data"),
        ANTHROPIC_BASE_URL=url,
        OPENAI_BASE_URL=url + "/v1",
        ANTHROPIC_API_KEY="sk-bench-0000000000",
        OPENAI_API_KEY="sk-bench-0000000000",
    )
    exe = shutil.which("mermaid") or sys.exit("mermaid is not on PATH (pip install -e .)")
    try:
        start = time.perf_counter()
        child = subprocess.Popen(
            [exe, "exec", "--json", "--safety", "full_access", "--model", model, "create hello.txt"],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        first = None
        while child.poll() is None:
            if first is None and log.exists() and log.stat().st_size > 0:
                first = time.perf_counter() - start
            time.sleep(0.0005)
        wall = time.perf_counter() - start
        out = child.stdout.read().decode() if child.stdout else ""
        if child.returncode != 0:
            raise SystemExit(f"{model}: exit {child.returncode}\n{out[-2000:]}")
    finally:
        proc.terminate()
        proc.wait()
    raws = [
        json.dumps(json.loads(line)["body"], ensure_ascii=False, separators=(",", ":")).encode()
        for line in log.read_text().splitlines()
    ]
    prefixes = [split_last_item(raw, key) for raw in raws]
    stable = sum(1 for a, b in zip(prefixes, prefixes[1:], strict=False) if b.startswith(a))
    return {
        "wall": wall,
        "first": first if first is not None else wall,
        "bytes": len(raws[0]),
        "stable": stable / max(1, len(raws) - 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"{'provider':<20}{'run s':>8}{'first req s':>13}{'first KB':>10}{'stable':>8}")
    for label, model, key in CASES:
        rows = []
        with tempfile.TemporaryDirectory(prefix="mermaid-bench-") as tmp:
            for n in range(args.runs):
                rows.append(one_run(model, key, Path(tmp), n))
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(
            f"{label:<20}{med['wall']:>8.3f}{med['first']:>13.3f}{med['bytes'] / 1000:>10.1f}{med['stable'] * 100:>7.0f}%"
        )
    print(f"{'target':<20}{0.6:>8.3f}{0.35:>13.3f}{16.0:>10.1f}{100:>7.0f}%")


if __name__ == "__main__":
    main()
