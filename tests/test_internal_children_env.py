"""No process Mermaid starts for itself carries a secret: the orphan guard, git (snapshot, diff,
worktrees), find, rg. Any same-uid process can read a dumpable process's /proc/PID/environ, so a
model's background command could collect a provider key from one of them while it runs. (The
model's own commands get a scrubbed environment too; test_sandbox_secrets covers Mermaid itself.)

A real run in a subprocess with an audit hook records the environment of every process started."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import call, say
from provider_fixtures import FakeProviderServer, fake_env

from mermaid_cli.run.workspace_watch import INLINE_WALK_ENTRIES

SECRET = "sk-ant-internal-children-0123456789abcdef"

PROBE = r"""
import json, os, sys
seen = []
def hook(event, args):
    if event == "subprocess.Popen":
        executable, argv, cwd, env = args
        seen.append({"argv": [str(a) for a in argv][:4], "env": None if env is None else dict(env)})
    elif event == "os.posix_spawn":
        path, argv, env = args
        seen.append({"argv": [str(a) for a in argv][:4], "env": None if env is None else dict(env)})
sys.addaudithook(hook)
real_exit = os._exit
def report(code):
    sys.stderr.write("PROBE " + json.dumps([code, seen]) + "\n"); sys.stderr.flush()
    real_exit(code)
os._exit = report
from mermaid_cli.cli.main import main
sys.argv = ["mermaid", *sys.argv[1:]]
main()
"""


SCRIPT = [
    {"type": "turn", **call("grep", {"pattern": "hello"}, "c1")},
    {"type": "turn", **call("execute_command", {"command": "echo hi > out.txt"}, "c2")},
    {"type": "turn", **say("done")},
]


def _started(cwd: Path, env: dict[str, str], model: str = "anthropic/claude-sonnet-4-5") -> list[dict]:
    full = {**os.environ, **env, "MERMAID_TEST_PROVIDER_KEY": SECRET}
    argv = ["exec", "--json", "--safety", "full_access", "--model", model, "go"]
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], cwd=cwd, env=full, capture_output=True, text=True, timeout=120
    )
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("PROBE ")]
    code, seen = json.loads(line.removeprefix("PROBE "))
    assert code == 0, proc.stderr
    return seen


def _git_project(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "a.txt").write_text("hello\n")
    return path


def test_no_internal_child_inherits_a_secret(tmp_path: Path, isolated_env) -> None:
    for project in (_git_project(tmp_path / "git"), tmp_path / "plain"):
        project.mkdir(exist_ok=True)
        (project / "a.txt").write_text("hello\n")
        if project.name == "plain":  # past what a snapshot lists in-process: `find` lists it
            (project / "many").mkdir()
            for n in range(INLINE_WALK_ENTRIES):
                (project / "many" / str(n)).touch()
        with FakeProviderServer(SCRIPT) as server:
            seen = _started(project, fake_env(server, key=SECRET))
        names = {Path(s["argv"][0]).name for s in seen}
        assert ("git" if project.name == "git" else "find") in names, names  # the snapshot ran
        assert "bash" in names, names  # the model's command (its environment is scrubbed too)
        inherited = [s["argv"] for s in seen if s["env"] is None]
        assert inherited == [], f"started with Mermaid's own environment: {inherited}"
        leaked = [s["argv"] for s in seen if any(SECRET in v for v in s["env"].values())]
        assert leaked == [], f"a secret reached: {leaked}"


def test_a_key_read_from_a_variable_of_any_name_reaches_no_child(tmp_path: Path, isolated_env) -> None:
    """`[providers.NAME] api_key_env` may name a variable nothing marks as secret (`LLM_CREDS`), and
    the key need not look like one: the value the run resolved is withheld all the same, from the
    model's commands and Mermaid's own children."""
    key = "Pw7Hq2Lk9Zx4Vb6Nm3"
    project = _git_project(tmp_path / "git")
    with FakeProviderServer(SCRIPT) as server:
        config = Path(os.environ["MERMAID_CONFIG_DIR"]) / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            f'[providers.myllm]\nbase_url = "{server.url}/v1"\napi_key_env = "LLM_CREDS"\napi = "chat"\n'
        )
        seen = _started(project, {"LLM_CREDS": key, "ALSO_THE_KEY": key}, model="myllm/m1")
    assert "bash" in {Path(s["argv"][0]).name for s in seen}
    leaked = [s["argv"] for s in seen if any(key in v for v in (s["env"] or os.environ).values())]
    assert leaked == [], f"the key reached: {leaked}"
