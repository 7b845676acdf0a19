"""What the workspace diff adds to a run as the tree grows (issue 23).

    python bench/bench_workspace.py [--runs 3] [--sizes 30000,300000] [--git] [--trees DIR]

Builds non-git trees of 30,000 files (4 KB each, 122 MB, the issue's tree) and 300,000 files
(1 KB each, to spare the disk), 40 files a directory, in a temp dir (or in --trees, kept and
reused between calls), then runs the replay demo (`write_file hello.txt`, one tool turn) through
`mermaid exec --json` in each tree and in an empty directory. "added" = median run in the tree -
median run in the empty directory. `--git` also times a git repository of the 30,000-file tree.
Also printed: the snapshot's own phases in-process (baseline walk, comparison after the run)
and their CPU seconds (with the find/git children): on a loaded machine wall times inflate.
Also the peak RSS of the mermaid process (largest of the runs). Targets: 30,000 files add <= 0.3 s,
300,000 files <= 2 s, no copy of the tree; peak RSS <= 60 MB. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo" / "hello.jsonl"
TARGETS = {30_000: 0.3, 300_000: 2.0}
RSS_TARGET_MB = 60  # peak RSS of the run (issue 23)


def build(root: Path, files: int, size: int) -> Path:
    done = root / ".built"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    block = (b"x" * 63 + b"\n") * (size // 64)
    for n in range(files):
        d = root / f"d{n // 4000}" / f"s{(n // 40) % 100}"
        if n % 40 == 0:
            d.mkdir(parents=True, exist_ok=True)
        fd = os.open(d / f"f{n}.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, block)
        os.close(fd)
    done.write_text("")
    return root


def git_init(root: Path) -> None:
    if (root / ".git").exists():
        return
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b")
    env["GIT_COMMITTER_EMAIL"] = "b@b"
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tree"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def run_once(exe: str, cwd: Path, data: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one run; the RSS is the mermaid process's own (its `find`
    children are a few MB each and end before it does)."""
    (cwd / "hello.txt").unlink(missing_ok=True)
    env = dict(os.environ, MERMAID_DATA_DIR=str(data), MERMAID_CONFIG_DIR=str(data / "cfg"))
    err = tempfile.TemporaryFile()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [exe, "exec", "--json", "--ephemeral", "--model", f"replay/{DEMO}", "create hello.txt"],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=err,
        stdin=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)  # the rusage of this one process, not all children
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err.seek(0)
        raise SystemExit(f"run failed in {cwd}: {err.read().decode()[-2000:]}")
    (cwd / "hello.txt").unlink(missing_ok=True)
    return wall, usage.ru_maxrss / 1024


def median_run(exe: str, cwd: Path, data: Path, runs: int) -> tuple[float, float]:
    """Median wall seconds and the largest peak RSS (MB) over `runs` runs."""
    results = [run_once(exe, cwd, data) for _ in range(runs)]
    return statistics.median(r[0] for r in results), max(r[1] for r in results)


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def phases(root: Path) -> tuple[float, float, float]:
    """Baseline and comparison of the snapshot itself, in this process: wall s, wall s, CPU s
    (this process and its `find`/`git` children: what a quiet machine would take at most)."""
    from mermaid_cli.run.workspace_diff import WorkspaceSnapshot

    cpu = _cpu()
    start = time.perf_counter()
    snap = WorkspaceSnapshot.take(root)
    taken = time.perf_counter() - start
    (root / "hello.txt").write_text("hi\n")
    start = time.perf_counter()
    snap.changed_files()
    compared = time.perf_counter() - start
    snap.close()
    (root / "hello.txt").unlink()
    return taken, compared, _cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="30000,300000")
    parser.add_argument("--git", action="store_true", help="also a git repository of the 30k tree")
    parser.add_argument("--trees", help="keep the built trees here and reuse them")
    args = parser.parse_args()
    exe = shutil.which("mermaid") or sys.exit("mermaid is not on PATH (pip install -e .)")
    work = Path(tempfile.mkdtemp(prefix="mermaid-bench-ws-"))
    trees = Path(args.trees) if args.trees else work / "trees"
    cases: list[tuple[str, Path, float | None]] = []
    for files in (int(s) for s in args.sizes.split(",") if s):
        size = 4096 if files <= 30_000 else 1024
        print(f"building {files} files of {size} B ...", file=sys.stderr, flush=True)
        tree = build(trees / f"plain-{files}", files, size)
        cases.append((f"{files:,} files, no git", tree, TARGETS.get(files)))
    if args.git:
        git_tree = trees / "git-30000"
        if not (git_tree / ".built").exists():
            shutil.copytree(build(trees / "plain-30000", 30_000, 4096), git_tree, dirs_exist_ok=True)
        git_init(git_tree)
        cases.append(("30,000 files, git", git_tree, 0.3))
    empty = work / "empty"
    empty.mkdir()
    time.sleep(0.1)  # the trees leave the snapshot's racy window (files written in the same tick)
    data = work / "data"
    base, base_rss = median_run(exe, empty, data, args.runs)
    print(f"empty directory: {base:.3f} s a run (median of {args.runs}), peak RSS {base_rss:.1f} MB")
    print(
        f"{'tree':<24}{'run s':>8}{'added s':>10}{'target s':>10}{'walk s':>9}{'compare s':>11}{'cpu s':>8}"
        f"{'rss MB':>8}{'target MB':>11}"
    )
    for label, tree, target in cases:
        wall, rss = median_run(exe, tree, data, args.runs)
        taken, compared, cpu = phases(tree)
        shown = f"{target:.2f}" if target is not None else "-"
        row = (
            f"{label:<24}{wall:>8.3f}{wall - base:>10.3f}{shown:>10}{taken:>9.3f}{compared:>11.3f}{cpu:>8.3f}"
            f"{rss:>8.1f}{RSS_TARGET_MB:>11.0f}"
        )
        print(row)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
