"""Startup and exit: import time, time to the first model request, time from the last request to
the exit, and peak RSS, each beside its target (issue 23). Prints numbers; asserts nothing.

    python bench/bench_startup.py [--runs 7]

- import: `python -c "import mermaid_cli.cli.main, mermaid_cli.run.runner"` beside `python -c pass`.
- the 3-turn task of bench_providers.py (shell `ls`, write a file, answer) through `mermaid exec
  --json` against fixtures/fake_provider.py: first request after start, warm (a data dir that
  has run before) and cold (a fresh data dir and no tool-spec, generated-code, kept-module,
  kept-schema or early-request cache beside the bytecode: the first run after an install, which
  takes the tool specs and generated code the package ships), and warm with the early first request
  turned off (`MERMAID_NO_EARLY_REQUEST=1`, no target: what the early request saves); exit after
  the last request (which includes streaming the last answer); peak RSS of the mermaid process.
- `mermaid --version` and the replay demo, as before.
Targets: first request <= 0.12 s warm, <= 0.2 s cold; exit <= 20 ms after the last response;
peak RSS <= 60 MB; `--version` <= 0.15 s; replay demo <= 0.5 s. These are for a quiet 2-core
machine: on a shared one compare figures from the same run (see bench/README.md).
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

DEMO = ROOT / "fixtures" / "demo" / "hello.jsonl"
SHARED_SPECS = ROOT / "mermaid_cli" / "tools" / "__pycache__" / "tool-specs"
#: the kept dataclass/annotation code (cli/generated_code.py), module code (cli/kept_modules.py)
#: and model schemas (cli/kept_schemas.py), all absent on a first run
GENERATED = ROOT / "mermaid_cli" / "__pycache__"


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


def task_run(exe: str, tmp: Path, n: int, data: Path, extra: dict[str, str] | None = None) -> dict[str, float]:
    """One 3-turn run: first request after start, exit after the last request, peak RSS."""
    script = tmp / f"script-{n}.jsonl"
    script.write_text("".join(json.dumps(x) + "\n" for x in SCRIPT))
    log = tmp / f"log-{n}.jsonl"
    server, url = start_server(script, log)
    project = tmp / f"project-{n}"
    project.mkdir()
    env = dict(os.environ, MERMAID_DATA_DIR=str(data), MERMAID_CONFIG_DIR=str(data / "cfg"))
    env.update(ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-bench-0000000000", **(extra or {}))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [exe, "exec", "--json", "--safety", "full_access", "--model", "anthropic/claude-sonnet-4-5", "go"]
    try:
        start = time.perf_counter()
        child = subprocess.Popen(
            cmd,
            cwd=project,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        stamps: list[float] = []
        size = 0
        status = usage = None
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            now = time.perf_counter()
            grown = log.stat().st_size if log.exists() else 0
            if grown > size:
                size = grown
                stamps.append(now)
            if pid:
                break
            time.sleep(0.0005)
        end = time.perf_counter()
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0 or not stamps:
            raise SystemExit(f"task run failed (exit {child.returncode})")
    finally:
        server.terminate()
        server.wait()
    assert usage is not None
    return {"first": stamps[0] - start, "exit": end - stamps[-1], "rss": usage.ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    exe = shutil.which("mermaid") or sys.exit("mermaid is not on PATH (pip install -e .)")
    work = Path(tempfile.mkdtemp(prefix="mermaid-bench-"))
    print(f"{'what':<34}{'median':>10}{'target':>10}")
    print(f"{'python itself s':<34}{import_time_of('pass', args.runs):>10.3f}{'-':>10}")
    imported = import_time_of("import mermaid_cli.cli.main, mermaid_cli.run.runner", args.runs)
    print(f"{'import cli + runner s':<34}{imported:>10.3f}{'-':>10}")
    cold = []
    for n in range(args.runs):
        shutil.rmtree(SHARED_SPECS, ignore_errors=True)
        for kept in [
            *GENERATED.glob("generated-code.*"),
            *GENERATED.glob("kept-modules.*"),
            *GENERATED.glob("model-schemas.*"),
        ]:
            kept.unlink()
        for recipes in GENERATED.glob("early-request.*"):
            shutil.rmtree(recipes, ignore_errors=True)
        cold.append(task_run(exe, work, n, work / f"cold-data-{n}"))
    warm_data = work / "warm-data"
    task_run(exe, work, 1000, warm_data)  # fills the caches
    warm = [task_run(exe, work, 1001 + n, warm_data) for n in range(args.runs)]
    med = {k: statistics.median(r[k] for r in warm) for k in warm[0]}
    print(f"{'first request, warm s':<34}{med['first']:>10.3f}{0.12:>10.2f}")
    off = [task_run(exe, work, 2001 + n, warm_data, {"MERMAID_NO_EARLY_REQUEST": "1"}) for n in range(args.runs)]
    print(f"{'first request, warm, not early s':<34}{statistics.median(r['first'] for r in off):>10.3f}{'-':>10}")
    print(f"{'first request, cold s':<34}{statistics.median(r['first'] for r in cold):>10.3f}{0.2:>10.2f}")
    print(f"{'exit after last request s':<34}{med['exit']:>10.3f}{0.02:>10.2f}")
    print(f"{'peak RSS, 3-turn run MB':<34}{max(r['rss'] for r in warm):>10.1f}{60:>10}")
    for name, cmd, target in (
        ("mermaid --version s", [exe, "--version"], 0.15),
        ("replay demo run s", [exe, "exec", "--json", "--model", f"replay/{DEMO}", "create hello.txt"], 0.5),
    ):
        wall, _ = measure(cmd, work, args.runs)
        print(f"{name:<34}{wall:>10.3f}{target:>10.2f}")
    shutil.rmtree(work, ignore_errors=True)


def import_time_of(code: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


if __name__ == "__main__":
    main()
