"""The Action's GitHub side (mermaid_cli/ci, action/gate.sh, action/comment.sh) against a local
stand-in for the GitHub REST API (tests/github_standin.py): a real HTTP server checking method,
path, the token header and the JSON body, and the real client, run as the steps run it (a
subprocess with the env action.yml maps, the action's checkout on PYTHONPATH, no site-packages)."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, plant_shadows, say, write_script
from github_standin import BOT, OWNER, REPO, TOKEN, GitHubStandIn

from mermaid_cli.ci.comment import defuse, diff_stats, marker

ACTION = ROOT / "action"


@functools.cache
def steps() -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load((ROOT / "action.yml").read_text())
    return {s.get("id") or s["name"]: s for s in doc["runs"]["steps"]}


def mapped_inputs(step: str) -> dict[str, str]:
    """action input -> env var for one step of action.yml (so the wiring itself is tested)."""
    out = {}
    for env_name, value in steps()[step].get("env", {}).items():
        if m := re.fullmatch(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", str(value)):
            out[m.group(1)] = env_name
    return out


@pytest.fixture
def api():
    with GitHubStandIn() as server:
        yield server


def outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


class Step:
    """Runs one action step's script with a simulated runner environment."""

    def __init__(self, tmp: Path, api: GitHubStandIn) -> None:
        self.tmp, self.api = tmp, api
        self.event_file = tmp / "event.json"
        self.event_file.write_text("{}")
        self.runner_temp = tmp / "runner_temp"
        self.runner_temp.mkdir(exist_ok=True)

    def event(self, name: str, payload: dict[str, Any]) -> None:
        self.event_name = name
        self.event_file.write_text(json.dumps(payload))

    event_name = "workflow_dispatch"

    def env(self, step: str, inputs: dict[str, str], extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_"))}
        names = mapped_inputs(step)
        doc = yaml.safe_load((ROOT / "action.yml").read_text())
        for name, env_name in names.items():
            default = str(doc["inputs"][name].get("default", ""))
            env[env_name] = TOKEN if name == "github-token" else ("" if "${{" in default else default)
        for name, value in inputs.items():
            assert name in names, f"{name} is not mapped into step {step}"
            env[names[name]] = value
        env.update(
            {
                "GITHUB_ACTION_PATH": str(ROOT),
                "GITHUB_API_URL": self.api.url,
                "GITHUB_REPOSITORY": f"{OWNER}/{REPO}",
                "GITHUB_EVENT_NAME": self.event_name,
                "GITHUB_EVENT_PATH": str(self.event_file),
                "GITHUB_ACTOR": "alice",
                "GITHUB_WORKFLOW": "Mermaid",
                "GITHUB_JOB": "review",
                "GITHUB_SERVER_URL": "https://github.example",
                "GITHUB_RUN_ID": "42",
                "GITHUB_OUTPUT": str(self.tmp / "out.txt"),
                "RUNNER_TEMP": str(self.runner_temp),
                "MERMAID_SETUP_PYTHON": sys.executable,
                "MERMAID_PYTHON": sys.executable,
            }
        )
        env.update(extra or {})
        return env

    #: the job's working directory (GITHUB_WORKSPACE: the checkout) the steps run in; None: this one
    workspace: Path | None = None

    def run(self, script: str, step: str, inputs: dict[str, str] | None = None, *args: str, **extra: str):
        out = self.tmp / "out.txt"
        out.write_text("")
        proc = subprocess.run(
            ["bash", str(ACTION / script), *args],
            env=self.env(step, inputs or {}, extra),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.workspace,
        )
        return proc, outputs(out)


@pytest.fixture
def step(tmp_path, api):
    return Step(tmp_path, api)


# --- the permission gate ------------------------------------------------------------------------------


#: what a checkout would stand in for if the steps' Python looked in the working directory
HOSTILE_CHECKOUT = ["json", "argparse", "urllib/__init__", "hashlib", "pathlib", "platform", "venv/__init__"]
HOSTILE_CHECKOUT += [
    "mermaid_cli/__init__",
    "mermaid_cli/ci/__init__",
    "mermaid_cli/ci/__main__",
    "pip/__init__",
]


def test_the_steps_never_import_the_checkouts_python_files(step, api, tmp_path):
    marker = tmp_path / "imported"
    step.workspace = plant_shadows(tmp_path / "workspace", HOSTILE_CHECKOUT, marker)
    api.state.permissions["alice"] = "write"
    proc, out = step.run("gate.sh", "gate")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out["allowed"] == "true"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    proc, out = step.run("comment.sh", "comment", {}, "start", MERMAID_RUN_DIR=str(run_dir))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir / "events.jsonl").write_text("")
    proc, _ = step.run("comment.sh", "comment", {}, "finish", MERMAID_RUN_DIR=str(run_dir))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not marker.exists(), marker.read_text()


def test_write_access_passes_after_one_authenticated_permission_request(step, api):
    api.state.permissions["alice"] = "write"
    proc, out = step.run("gate.sh", "gate")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out["allowed"] == "true" and out["read-only"] == "false"
    assert "alice has write permission" in proc.stdout
    assert api.calls() == [("GET", f"/repos/{OWNER}/{REPO}/collaborators/alice/permission")]
    seen = api.state.requests[0]
    assert seen.headers["authorization"] == f"Bearer {TOKEN}"
    assert seen.headers["x-github-api-version"] == "2022-11-28"
    assert Path(out["run-dir"]).is_dir()
    assert f"::add-mask::{TOKEN}" in proc.stdout
    assert proc.stdout.count(TOKEN) == 1  # only inside the mask command


@pytest.mark.parametrize("level", ["admin", "maintain"])
def test_admin_and_maintain_pass(step, api, level):
    api.state.permissions["alice"] = level
    proc, out = step.run("gate.sh", "gate")
    assert proc.returncode == 0 and out["allowed"] == "true"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ({"alice": "read"}, "alice has read permission; write access is needed"),
        ({"alice": "none"}, "alice has none permission"),
        ({}, "alice is not a collaborator of this repository"),
    ],
)
def test_without_write_access_the_gate_refuses_before_anything_runs(step, api, setup, message):
    api.state.permissions.update(setup)
    proc, out = step.run("gate.sh", "gate")
    assert proc.returncode == 1
    assert out["allowed"] == "false" and "run-dir" not in out
    assert f"::error title=Mermaid permission gate::{message}" in proc.stdout


def test_a_bad_token_fails_closed_and_the_token_is_not_printed(step, api):
    api.state.permissions["alice"] = "write"
    proc, out = step.run("gate.sh", "gate", {"github-token": "ghs_wrong"})
    assert proc.returncode == 1 and out["allowed"] == "false"
    assert "HTTP 401 Bad credentials" in proc.stdout
    assert "ghs_wrong" not in proc.stdout.replace("::add-mask::ghs_wrong", "")


def test_no_token_refuses_without_a_request(step, api):
    proc, out = step.run("gate.sh", "gate", {"github-token": ""})
    assert proc.returncode == 1 and "github-token is empty" in proc.stdout
    assert api.calls() == []


def test_allowed_users_pass_without_a_request(step, api):
    proc, out = step.run("gate.sh", "gate", {"allowed-users": "bob,\nAlice # the maintainer"})
    assert proc.returncode == 0 and "alice is in allowed-users" in proc.stdout
    assert api.calls() == []


def test_the_triggering_actor_is_the_one_checked(step, api):
    api.state.permissions.update({"alice": "write", "mallory": "read"})
    proc, _ = step.run("gate.sh", "gate", {}, GITHUB_TRIGGERING_ACTOR="mallory")
    assert proc.returncode == 1 and "mallory has read permission" in proc.stdout


@pytest.mark.parametrize("bots", ["", "renovate[bot]"])
def test_a_bot_is_refused_unless_allowed_even_with_write_access(step, api, bots):
    api.state.permissions["dependabot[bot]"] = "write"
    proc, out = step.run("gate.sh", "gate", {"allowed-bots": bots}, GITHUB_ACTOR="dependabot[bot]")
    assert proc.returncode == 1, proc.stdout
    assert "dependabot[bot] is a bot and not in allowed-bots" in proc.stdout
    assert api.calls() == []


def test_a_sender_of_type_bot_is_a_bot(step, api):
    api.state.permissions["ci-helper"] = "write"
    step.event("workflow_dispatch", {"sender": {"login": "ci-helper", "type": "Bot"}})
    proc, _ = step.run("gate.sh", "gate", {}, GITHUB_ACTOR="ci-helper")
    assert proc.returncode == 1 and "is a bot" in proc.stdout


def test_an_allowed_bot_passes(step, api):
    proc, out = step.run(
        "gate.sh", "gate", {"allowed-bots": "dependabot[bot]"}, GITHUB_ACTOR="dependabot[bot]"
    )
    assert proc.returncode == 0 and out["allowed"] == "true"


def _pr(number: int, head: str | None) -> dict[str, Any]:
    return {
        "number": number,
        "head": {"repo": {"full_name": head} if head else None},
        "base": {"repo": {"full_name": f"{OWNER}/{REPO}"}},
    }


@pytest.mark.parametrize(("head", "fork"), [(f"{OWNER}/{REPO}", False), ("evil/widgets", True), (None, True)])
def test_a_pull_request_from_a_fork_runs_read_only(step, api, head, fork):
    api.state.permissions["alice"] = "write"
    step.event("pull_request", {"pull_request": _pr(7, head), "number": 7})
    proc, out = step.run("gate.sh", "gate")
    assert proc.returncode == 0, proc.stdout
    assert out["read-only"] == ("true" if fork else "false")


def test_fork_pull_requests_refuse_and_allow(step, api):
    api.state.permissions["alice"] = "write"
    step.event("pull_request_target", {"pull_request": _pr(7, "evil/widgets")})
    proc, out = step.run("gate.sh", "gate", {"fork-pull-requests": "refuse"})
    assert proc.returncode == 1 and "comes from the fork evil/widgets" in proc.stdout
    proc, out = step.run("gate.sh", "gate", {"fork-pull-requests": "allow"})
    assert proc.returncode == 0 and out["read-only"] == "false"
    proc, out = step.run("gate.sh", "gate", {"fork-pull-requests": "sometimes"})
    assert proc.returncode == 1 and "fork-pull-requests must be one of" in proc.stdout


def test_a_comment_on_a_fork_pull_request_is_looked_up(step, api):
    api.state.permissions["alice"] = "write"
    api.state.pulls[9] = _pr(9, "evil/widgets")
    step.event("issue_comment", {"issue": {"number": 9, "pull_request": {"url": "x"}}})
    proc, out = step.run("gate.sh", "gate")
    assert proc.returncode == 0 and out["read-only"] == "true"
    assert ("GET", f"/repos/{OWNER}/{REPO}/pulls/9") in api.calls()


def test_the_gate_needs_nothing_but_the_standard_library():
    proc = subprocess.run(
        [sys.executable, "-S", "-c", "import mermaid_cli.ci.__main__, sys; print(sorted(sys.modules))"],
        env={"PYTHONPATH": str(ROOT), "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.replace("'", '"'))
    assert not [m for m in loaded if m.split(".")[0] in ("pydantic", "httpx", "click")]
    assert not [m for m in loaded if m.startswith("mermaid_cli.") and not m.startswith("mermaid_cli.ci")]


# --- the sticky comment -------------------------------------------------------------------------------


def _events(path: Path, *events: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


RESULT = {
    "type": "result",
    "status": "success",
    "exit_code": 0,
    "response": "Fixed it. cc @octocat",
    "cost_usd": 0.0123,
    "num_turns": 3,
    "tool_calls": 4,
    "tool_errors": 1,
    "files_changed": ["src/a.py"],
    "errors": [],
}


def test_start_posts_one_comment_then_later_runs_update_it_in_place(step, api):
    step.event("pull_request", {"pull_request": _pr(7, f"{OWNER}/{REPO}"), "number": 7})
    run_dir = step.tmp / "run"
    run_dir.mkdir()
    proc, out = step.run("comment.sh", "comment", {}, "start", MERMAID_RUN_DIR=str(run_dir))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (first,) = api.state.comments[7]
    assert out["comment-id"] == str(first["id"])
    assert first["body"].startswith(marker("Mermaid/review")) and "Mermaid is working" in first["body"]
    post = next(r for r in api.state.requests if r.method == "POST")
    assert post.path == f"/repos/{OWNER}/{REPO}/issues/7/comments"
    assert (
        post.headers["authorization"] == f"Bearer {TOKEN}"
        and post.headers["content-type"] == "application/json"
    )
    assert (run_dir / "comment-follow.pid").exists()
    # the finish step stops the follower and writes the outcome into the same comment
    _events(run_dir / "events.jsonl", {"type": "session_started"}, RESULT)
    diff = step.tmp / "change.diff"
    diff.write_text("--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1,2 @@\n-x\n+y\n+z\n")
    proc, _ = step.run(
        "comment.sh",
        "Update the comment with the outcome",
        {},
        "finish",
        MERMAID_RUN_DIR=str(run_dir),
        MERMAID_EXIT_CODE="0",
        MERMAID_DIFF_FILE=str(diff),
        MERMAID_COMMENT_ID=out["comment-id"],
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (only,) = api.state.comments[7]
    body = only["body"]
    assert "✅ Mermaid: success (exit 0)" in body and "$0.0123" in body
    assert "`src/a.py` +2 −1" in body and "| tool calls | 4 (1 failed) |" in body
    assert "@\u200boctocat" in body and "@octocat" not in body
    patch = [r for r in api.state.requests if r.method == "PATCH"][-1]
    assert patch.path == f"/repos/{OWNER}/{REPO}/issues/comments/{only['id']}"
    # a new run of the same job (no comment id yet) finds the comment by its marker
    api.state.requests.clear()
    proc, out = step.run("comment.sh", "comment", {}, "start", MERMAID_RUN_DIR=str(run_dir))
    assert len(api.state.comments[7]) == 1 and out["comment-id"] == str(only["id"])
    assert [m for m, _ in api.calls()] == ["GET", "PATCH"]
    (run_dir / "comment-follow.stop").write_text("")


def test_a_forged_marker_by_someone_else_is_never_edited(step, api):
    step.event("issues", {"issue": {"number": 3}})
    forged = api.state.comment(3, marker("Mermaid/review") + "\nlooks official", login="mallory")
    run_dir = step.tmp / "run"
    run_dir.mkdir()
    proc, out = step.run("comment.sh", "comment", {}, "start", MERMAID_RUN_DIR=str(run_dir))
    assert proc.returncode == 0
    assert forged["body"].endswith("looks official")
    assert len(api.state.comments[3]) == 2 and out["comment-id"] != str(forged["id"])
    (run_dir / "comment-follow.stop").write_text("")


def test_comment_key_keeps_two_jobs_apart_and_pages_are_searched(step, api):
    step.event("issues", {"issue": {"number": 5}})
    for i in range(120):
        api.state.comment(5, f"chatter {i}", login="someone")
    mine = api.state.comment(5, marker("nightly") + "\nold", login=BOT)
    run_dir = step.tmp / "run"
    run_dir.mkdir()
    proc, out = step.run(
        "comment.sh", "comment", {"comment-key": "nightly"}, "start", MERMAID_RUN_DIR=str(run_dir)
    )
    assert out["comment-id"] == str(mine["id"]) and "Mermaid is working" in mine["body"]
    pages = [r.query.get("page") for r in api.state.requests if r.method == "GET"]
    assert pages == [["1"], ["2"]]
    (run_dir / "comment-follow.stop").write_text("")


def test_the_follower_posts_progress_and_stops_at_the_result(tmp_path, api):
    api.state.comment(7, marker("Mermaid/review") + "\nstart", login=BOT)
    cid = api.state.comments[7][0]["id"]
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}))
    events = _events(
        tmp_path / "events.jsonl",
        {"type": "session_started"},
        {"type": "turn_done", "cost_usd": 0.5},
        {"type": "tool_finished", "name": "read_file", "status": "success"},
    )
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(ROOT),
        "INPUT_GITHUB_TOKEN": TOKEN,
        "GITHUB_API_URL": api.url,
        "GITHUB_REPOSITORY": f"{OWNER}/{REPO}",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_WORKFLOW": "Mermaid",
        "GITHUB_JOB": "review",
    }
    args = ["-m", "mermaid_cli.ci", "comment", "follow", f"--events={events}", f"--comment-id={cid}"]
    proc = subprocess.Popen([sys.executable, "-s", *args, "--interval=0.05"], env=env)
    try:
        for _ in range(600):  # wait (not a timing assertion) for the first progress update
            if "1 model calls, 1 tool calls" in api.state.comments[7][0]["body"]:
                break
            time.sleep(0.05)
        body = api.state.comments[7][0]["body"]
        assert "1 model calls, 1 tool calls, cost $0.5000" in body and "`read_file success`" in body
        with events.open("a") as f:
            f.write(json.dumps(RESULT) + "\n")
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()


def test_no_issue_means_no_comment_and_a_notice(step, api):
    run_dir = step.tmp / "run"
    run_dir.mkdir()
    proc, out = step.run("comment.sh", "comment", {}, "start", MERMAID_RUN_DIR=str(run_dir))
    assert proc.returncode == 0 and "no comment posted" in proc.stdout
    assert api.calls() == [] and "comment-id" not in out


def test_a_comment_github_refuses_is_a_warning_not_a_failed_job(step, api):
    step.event("issues", {"issue": {"number": 3}})
    run_dir = step.tmp / "run"
    run_dir.mkdir()
    proc, _ = step.run(
        "comment.sh", "comment", {"github-token": "ghs_wrong"}, "start", MERMAID_RUN_DIR=str(run_dir)
    )
    assert proc.returncode == 0 and "::warning title=Mermaid comment::could not post" in proc.stdout


def test_diff_stats_and_defuse():
    assert diff_stats("--- a/x\n+++ b/x\n+a\n-b\n-c\n--- /dev/null\n+++ b/new\n+1\n") == [
        ("x", 1, 2),
        ("new", 1, 0),
    ]
    assert defuse("ping @team and me@example.com") == "ping @\u200bteam and me@\u200bexample.com"


# --- the run step under the gate's verdict --------------------------------------------------------------


def test_a_read_only_verdict_forces_safety_read_only_and_the_sandbox_is_on(tmp_path):
    from test_action import Runner

    gh = Runner(tmp_path)
    gh.record_argv()
    model = "replay/" + str(write_script(tmp_path / "s.jsonl", [say("looked")]))
    result = gh.run(
        {"prompt": "review", "model": model, "safety": "full_access", "allow-untrusted-tools": "true"},
        env={"MERMAID_FORCE_READ_ONLY": "true"},
    )
    assert result.code == 0, result.stdout + result.stderr
    assert "--safety=read_only" in gh.argv and "--safety=full_access" not in gh.argv
    assert "--allow-untrusted-tools" not in gh.argv and "--sandbox=on" in gh.argv
    assert "a pull request from a fork runs read-only" in result.stdout
    assert result.events[0]["safety_mode"] == "read_only"


def test_tool_rules_and_add_dir_inputs_become_flags(tmp_path):
    from test_action import Runner

    gh = Runner(tmp_path)
    gh.record_argv()
    (gh.workspace / "shared").mkdir()
    model = "replay/" + str(write_script(tmp_path / "s.jsonl", [say("ok")]))
    result = gh.run(
        {
            "prompt": "x",
            "model": model,
            "allowed-tools": "execute_command(git *)\n# a comment\n",
            "disallowed-tools": "web_fetch\nBash(git push:*)",
            "add-dir": "shared",
            "sandbox": "best-effort",
        }
    )
    assert result.code == 0, result.stdout + result.stderr
    assert "--allowed-tools=execute_command(git *)" in gh.argv
    assert "--disallowed-tools=web_fetch" in gh.argv and "--disallowed-tools=Bash(git push:*)" in gh.argv
    assert f"--add-dir={gh.workspace}/shared" in gh.argv and "--sandbox=best-effort" in gh.argv


def test_a_structured_answer_is_shown_as_json(tmp_path):
    from mermaid_cli.ci.comment import read_progress, render_final

    events = _events(
        tmp_path / "e.jsonl", {**RESULT, "structured_output": {"verdict": "approve", "by": "@x"}}
    )
    body = render_final({}, read_progress(events), 0, None)
    assert '```json\n{\n  "verdict": "approve",\n  "by": "@\u200bx"\n}\n```' in body
