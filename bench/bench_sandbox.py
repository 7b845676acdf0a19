"""What the kernel sandbox adds per command: `true` spawned with and without it, medians.

Prepares once (as a run would), then spawns `/bin/true` N times each way through
`subprocess.Popen` with the same flags `proctree.Child.spawn` uses. Also prints the one-off
`prepare()` cost, and, with the orphan guard's cgroup (where one is writable), what the first
command after a quiet spell spends joining it: the kernel's migration lock waits for an RCU grace
period then, unless `OrphanGuard.warm_join` took it while the call was judged (here: 8 ms of
judging, slept). Run: `python bench/bench_sandbox.py [N]`.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mermaid_cli.security.sandbox import KernelSupport, OrphanGuard, for_mode, prepare, probe
from mermaid_cli.security.sandbox.linux import PopenKwargs

TARGET_MS = 5.0


def spawn(kwargs: PopenKwargs | None) -> float:
    t = time.perf_counter()
    p = subprocess.Popen(["/bin/true"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True, close_fds=True, env={"PATH": "/usr/bin:/bin"}, **(kwargs or {}))  # fmt: skip
    p.communicate()
    assert p.returncode == 0, p.returncode
    return (time.perf_counter() - t) * 1000


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    support = probe()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / "proj" / ".git").mkdir(parents=True)
        (root / "priv").mkdir()
        results: dict[str, float] = {}
        t = time.perf_counter()
        sb = prepare(for_mode("auto", project_root=root / "proj", temp_dir=root / "priv"), support=support)
        prepare_ms = (time.perf_counter() - t) * 1000
        hardening = prepare(None, support=support)
        for _ in range(5):  # warm up
            spawn(None)
            spawn(sb.popen_kwargs())
        cases: dict[str, PopenKwargs | None] = {
            "plain": None,
            "sandbox": sb.popen_kwargs(),
            "hardening only (full_access)": hardening.popen_kwargs(),
        }
        samples: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(n):  # interleaved, so drift hits every case alike
            for name, kwargs in cases.items():
                samples[name].append(spawn(kwargs))
        for name, xs in samples.items():
            results[name] = statistics.median(xs)
            print(f"{name:>30}: median {results[name]:.2f} ms over {n} runs")
        print(
            f"prepare() once per run: {prepare_ms:.1f} ms ({sb.rule_count} rules, {sb.describe()['read_only_strategy']})"
        )
        cost = results["sandbox"] - results["plain"]
        print(f"sandbox cost per command: {cost:.2f} ms (target ≤ {TARGET_MS:.0f} ms)")
        print(
            f"full_access hardening cost per command: {results['hardening only (full_access)'] - results['plain']:.2f} ms"
        )
        first_command(support, max(3, n // 10))


def first_command(support: KernelSupport, rounds: int) -> None:
    """The spawn of a turn's first command, its cgroup join cold and warmed, medians."""
    if support.cgroup is None:
        print("first command of a turn: no writable cgroup v2 here (the guard tracks sessions)")
        return
    guard = OrphanGuard.start(support.cgroup)
    try:
        joined = prepare(None, guard=guard, support=support)
        times: dict[str, list[float]] = {"cold": [], "warmed": []}
        for _ in range(rounds):
            for case, xs in times.items():
                time.sleep(0.3)  # a quiet spell: the model is thinking
                if case == "warmed":
                    guard.warm_join()
                time.sleep(0.008)  # the gate judges the call
                xs.append(spawn(joined.popen_kwargs()))
        cold, warmed = (statistics.median(times[k]) for k in ("cold", "warmed"))
        print(
            f"first command of a turn (spawn, joining the run cgroup): cold {cold:.2f} ms, "
            f"warmed {warmed:.2f} ms over {rounds} rounds (target ≤ {TARGET_MS:.0f} ms)"
        )
    finally:
        guard.close()


if __name__ == "__main__":
    main()
