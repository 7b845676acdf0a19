"""The first command of a turn does not wait for the kernel's cgroup-migration lock on the path
(issue 23): when the model calls `execute_command`, Mermaid takes the lock on a thread, by moving
itself into the cgroup it is in, before the gate judges the call; the child then joins the run
cgroup as before. A real run in a subprocess with an audit hook records the opens and spawns."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import call, say
from provider_fixtures import FakeProviderServer, fake_env

from mermaid_cli.security.sandbox import probe

SUPPORT = probe(env={})

PROBE = r"""
import json, os, sys
seen = []
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].endswith("cgroup.procs"):
        seen.append(["open", args[0], args[2]])
    elif event == "subprocess.Popen":
        seen.append(["spawn", str(args[1][0]) if args[1] else ""])
sys.addaudithook(hook)
real_exit = os._exit
def report(code):
    sys.stderr.write("PROBE " + json.dumps([code, seen, open("/proc/self/cgroup").read()]) + "\n")
    sys.stderr.flush()
    real_exit(code)
os._exit = report
from mermaid_cli.cli.main import main
sys.argv = ["mermaid", *sys.argv[1:]]
main()
"""


@pytest.mark.skipif(SUPPORT.cgroup is None, reason="no writable cgroup v2 here (the guard uses sessions)")
def test_a_shell_call_warms_the_join_into_mermaids_own_cgroup(project: Path, isolated_env: None) -> None:
    script = [
        {"type": "turn", **call("execute_command", {"command": "true"}, "c1")},
        {"type": "turn", **say("done")},
    ]
    before = Path("/proc/self/cgroup").read_text()
    with FakeProviderServer(script) as server:
        env = {**os.environ, **fake_env(server)}
        argv = ["exec", "--json", "--safety", "full_access", "--model", "anthropic/claude-sonnet-4-5", "go"]
        proc = subprocess.run(
            [sys.executable, "-c", PROBE, *argv], cwd=project, env=env, capture_output=True, text=True, timeout=120
        )
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("PROBE ")]
    code, seen, cgroup_at_exit = json.loads(line.removeprefix("PROBE "))
    assert code == 0, proc.stderr
    assert SUPPORT.cgroup is not None
    own = os.path.join(SUPPORT.cgroup, "cgroup.procs")
    writes = [s for s in seen if s[0] == "open" and s[2] & (os.O_WRONLY | os.O_RDWR)]
    # the guard's fd into the run cgroup (opened at start), then the warm-up into our own cgroup
    run_cgroup = [s[1] for s in writes if s[1] != own]
    assert run_cgroup and all(Path(p).parent.parent == Path(SUPPORT.cgroup) for p in run_cgroup)
    warm = [i for i, s in enumerate(seen) if s[:2] == ["open", own] and s in writes]
    bash = [i for i, s in enumerate(seen) if s == ["spawn", "bash"]]
    assert warm and bash and warm[0] < bash[0]
    assert cgroup_at_exit == before  # Mermaid never left the cgroup it started in
