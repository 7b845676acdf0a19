"""The `agent` tool in real runs against the fake provider server: each child is its own
conversation (the server answers requests in order, parent and children alike), its authority
only narrows, its events are tagged into the parent's stream and its spending is the run's."""

from __future__ import annotations

import json

from conftest import call, calls, pid_alive, run_inprocess, say
from provider_fixtures import FakeProviderServer, fake_env

MODEL = "anthropic/claude-sonnet-4-5"


def _turns(*turns: dict) -> list[dict]:
    return [{"type": "turn", **t} for t in turns]


def _spawn(prompt: str, call_id: str = "p1", **extra: object) -> dict:
    return call("agent", {"prompt": prompt, "description": "worker", **extra}, call_id)


def _run(project, script: list[dict], *args: str, env: dict | None = None):
    with FakeProviderServer(_turns(*script)) as server:
        out = run_inprocess(
            ["--json", "--model", MODEL, *args], project, env={**fake_env(server), **(env or {})}
        )
        return out, server.requests


def _child_events(out, agent_id: str) -> list[dict]:
    return [e for e in out.events if e.get("agent_id") == agent_id]


def test_read_only_parent_spawns_general_child_whose_write_is_denied(project):
    out, requests = _run(
        project,
        [
            _spawn("Create a.txt containing x."),
            call("write_file", {"path": "a.txt", "content": "x"}, "k1"),
            say("I could not write a.txt: denied."),
            say("The child could not write."),
        ],
        "--safety",
        "read_only",
        "delegate the write",
    )
    assert out.code == 0, out.stderr
    assert not (project / "a.txt").exists()
    child = _child_events(out, "a1")
    finished = [e for e in child if e["type"] == "tool_finished" and e["name"] == "write_file"]
    assert finished and finished[0]["status"] == "error" and finished[0]["decision"]["verdict"] == "deny"
    assert all(e["parent_call_id"] == "tool#1" for e in child)
    types = [e["type"] for e in out.events]
    assert types.index("agent_started") < types.index("agent_finished")
    started = next(e for e in out.events if e["type"] == "agent_started")
    assert started["agent_type"] == "general" and started["agent_id"] == "a1"
    # the child's report comes back to the parent with its id
    parent_done = next(e for e in out.events if e["type"] == "tool_finished" and e["name"] == "agent")
    assert "[agent_id: a1]" in parent_done["output"]
    # separate conversations: the child saw only its own prompt, never the parent's
    child_body = json.dumps(requests[1]["body"])
    assert "Create a.txt containing x." in child_body and "delegate the write" not in child_body
    assert "delegate the write" in json.dumps(requests[3]["body"])
    result = out.events[-1]
    assert result["agents"][0]["agent_id"] == "a1" and result["agents"][0]["type"] == "general"
    # the child's usage is the run's usage (4 requests, 100 input tokens each)
    assert result["usage"]["input_tokens"] == 400
    assert result["session_id"]
    sessions = project / ".mermaid" / "conversations"
    assert (sessions / f"{result['session_id']}.agents" / "a1.jsonl").is_file()
    # `sessions show` lists the child and shows its own conversation
    from conftest import run_mermaid

    shown = run_mermaid(["sessions", "show", result["session_id"], "--plain"], project)
    assert "subagents: a1" in shown.stdout
    child_view = run_mermaid(["sessions", "show", result["session_id"], "--agent", "a1", "--plain"], project)
    assert child_view.code == 0 and "Create a.txt containing x." in child_view.stdout
    assert "delegate the write" not in child_view.stdout
    bad = run_mermaid(["sessions", "show", result["session_id"], "--agent", "../x"], project)
    assert bad.code == 2 and "invalid agent id" in bad.stderr


def _user_config(isolated_env, text: str) -> None:
    cfg = isolated_env / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(text)


def test_explore_child_under_full_access_parent_cannot_write(project):
    out, _ = _run(
        project,
        [
            _spawn("Look around, then create a.txt.", type="explore"),
            call("write_file", {"path": "a.txt", "content": "x"}, "k1"),
            say("Found nothing to write with."),
            say("ok"),
        ],
        "--safety",
        "full_access",
        "explore",
    )
    assert out.code == 0, out.stderr
    assert not (project / "a.txt").exists()
    started = next(e for e in out.events if e["type"] == "agent_started")
    assert started["agent_type"] == "explore"
    write = next(e for e in _child_events(out, "a1") if e["type"] == "tool_finished")
    # the explore type is not offered write_file at all
    assert write["status"] == "error" and "write_file" in write["error"]


def test_denied_tool_stays_denied_two_levels_down(project):
    out, _ = _run(
        project,
        [
            _spawn("Delegate: run the tests.", deny_tools=["execute_command"]),
            call("agent", {"prompt": "Run `touch ran.txt`.", "description": "runner"}, "k1"),
            call("execute_command", {"command": "touch ran.txt"}, "g1"),
            say("could not run it"),
            say("grandchild could not run it"),
            say("done"),
        ],
        "--safety",
        "full_access",
        "go",
    )
    assert out.code == 0, out.stderr
    assert not (project / "ran.txt").exists()
    grandchild = _child_events(out, "a2")
    run = next(e for e in grandchild if e["type"] == "tool_finished" and e["name"] == "execute_command")
    assert run["status"] == "error" and "not available to this subagent" in run["error"]
    nested = next(e for e in out.events if e["type"] == "agent_started" and e["agent_id"] == "a2")
    assert nested["parent_call_id"] == "tool#1"  # the child's own `agent` call
    assert [a["parent"] for a in out.events[-1]["agents"]] == [None, "a1"]


def test_follow_up_keeps_the_spawn_ceiling_after_the_parent_mode_changed(project):
    first, _ = _run(
        project,
        [_spawn("Say hello."), say("hello"), say("spawned")],
        "--safety",
        "read_only",
        "spawn one",
    )
    assert first.code == 0, first.stderr
    sid = first.events[-1]["session_id"]
    second, requests = _run(
        project,
        [
            call("agent", {"agent_id": "a1", "prompt": "Now create a.txt."}, "p2"),
            call("write_file", {"path": "a.txt", "content": "x"}, "k2"),
            say("denied again"),
            say("the child stayed read-only"),
        ],
        "--safety",
        "full_access",
        "--resume",
        sid,
        "follow up",
    )
    assert second.code == 0, second.stderr
    assert not (project / "a.txt").exists()
    write = next(e for e in _child_events(second, "a1") if e["type"] == "tool_finished")
    assert write["decision"]["verdict"] == "deny"
    # the follow-up continued the child's own conversation
    body = json.dumps(requests[1]["body"])
    assert "Say hello." in body and "Now create a.txt." in body and "spawn one" not in body
    assert next(e for e in second.events if e["type"] == "agent_started")["follow_up"] is True


def test_foreign_id_is_refused_and_list_and_delete_work(project):
    out, _ = _run(
        project,
        [
            _spawn("Say hi."),
            say("hi"),
            call("agent", {"agent_id": "a9", "prompt": "more"}, "p2"),
            call("agent", {"action": "list"}, "p3"),
            call("agent", {"action": "delete", "agent_id": "a1"}, "p4"),
            call("agent", {"action": "list"}, "p5"),
            say("done"),
        ],
        "--safety",
        "full_access",
        "go",
    )
    assert out.code == 0, out.stderr
    finished = [e for e in out.events if e["type"] == "tool_finished" and e["name"] == "agent"]
    assert finished[1]["status"] == "error" and "not a subagent of this run" in finished[1]["error"]
    assert finished[2]["output"].startswith("a1\tgeneral")
    assert finished[3]["output"] == "deleted a1"
    assert finished[4]["output"] == "no subagents"


def test_three_children_in_one_message_run_concurrently(project):
    spawn = {"description": "worker"}
    out, _ = _run(
        project,
        [
            calls(
                ("agent", {"prompt": "one", **spawn}, "p1"),
                ("agent", {"prompt": "two", **spawn}, "p2"),
                ("agent", {"prompt": "three", **spawn}, "p3"),
            ),
            say("r"),
            say("r"),
            say("r"),
            say("all done"),
        ],
        "--safety",
        "full_access",
        "fan out",
    )
    assert out.code == 0, out.stderr
    kinds = [
        (e["type"], e.get("agent_id")) for e in out.events if e["type"] in ("agent_started", "agent_finished")
    ]
    # every child started before the first one finished: they were in flight together
    assert [k for k, _ in kinds[:3]] == ["agent_started"] * 3
    assert {a for _, a in kinds} == {"a1", "a2", "a3"}


def test_max_depth_zero_removes_the_tool(project, isolated_env):
    _user_config(isolated_env, "[agents]\nmax_depth = 0\n")
    out, _ = _run(project, [say("ok")], "go")
    assert out.code == 0, out.stderr
    assert "agent" not in out.events[0]["tools"]


def test_project_config_cannot_redefine_a_builtin_type(project):
    (project / ".mermaid").mkdir(exist_ok=True)
    (project / ".mermaid" / "config.toml").write_text('[agents.types.explore]\nsafety = "full_access"\n')
    out, _ = _run(project, [say("ok")], "go")
    assert out.code == 2
    assert "built-in type 'explore' cannot be redefined" in out.stderr


def test_child_that_blows_the_shared_max_cost_ends_the_run_with_exit_4(project):
    out, _ = _run(
        project,
        [
            _spawn("Read a lot."),
            call("glob", {"pattern": "*"}, "k1", input_tokens=1_000_000, output_tokens=10),
            say("never reached"),
            say("never reached either"),
        ],
        "--safety",
        "full_access",
        "--max-cost",
        "1",
        "go",
    )
    assert out.code == 4, out.stderr
    result = out.events[-1]
    assert result["type"] == "result" and result["status"] == "limit"
    assert result["cost_usd"] >= 1
    assert result["agents"][0]["status"] == "limit"
    finished = next(e for e in out.events if e["type"] == "agent_finished")
    assert finished["status"] == "limit"


def test_headless_ask_in_a_child_blocks_the_run(project, isolated_env):
    _user_config(isolated_env, '[agents.types.asker]\ndescription = "asks"\nsafety = "ask"\n')
    out, _ = _run(
        project,
        [
            _spawn("Create a.txt.", type="asker"),
            call("write_file", {"path": "a.txt", "content": "x"}, "k1"),
            say("blocked"),
            say("the child was blocked"),
        ],
        "--safety",
        "full_access",
        "go",
    )
    assert out.code == 3, out.stderr
    result = out.events[-1]
    assert result["status"] == "blocked"
    assert result["blocked"][-1]["tool"] == "agent" and result["blocked"][-1]["agent_id"] == "a1"
    assert not (project / "a.txt").exists()


def _sigterm_once_running(project, pid_names: tuple[str, ...]) -> tuple[int, list[dict], bytes, list[int]]:
    """Run `replay/s.jsonl` (full access) as a real process; once every named pid file is written,
    SIGTERM it. Its exit code, events, stderr and those pids."""
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "mermaid_cli", "exec", "--json", "--safety", "full_access"]
        + ["--model", "replay/s.jsonl", "fan out"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    pids = [project / name for name in pid_names]
    for _ in range(300):
        if all(p.exists() and p.read_text().strip() for p in pids):
            break
        time.sleep(0.05)
    written = [int(p.read_text()) for p in pids]
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, [json.loads(line) for line in out.splitlines()], err, written


def test_sigterm_during_children_stops_every_child_process(project):
    import time

    from conftest import write_script

    for name in ("c1", "c2"):
        write_script(
            project / f"{name}.jsonl",
            [call("execute_command", {"command": f"echo $$ > {name}.pid; sleep 60"}), say("never")],
        )
    write_script(
        project / "s.jsonl",
        [
            calls(
                ("agent", {"prompt": "one", "description": "w", "model": "replay/c1.jsonl"}, "p1"),
                ("agent", {"prompt": "two", "description": "w", "model": "replay/c2.jsonl"}, "p2"),
            ),
            say("never"),
        ],
    )
    code, events, err, children = _sigterm_once_running(project, ("c1.pid", "c2.pid"))
    assert code == 143, err
    assert events[-1]["type"] == "result" and events[-1]["status"] == "interrupted"
    # each child's end is reported, with what it spent, before its `agent` call's own end
    ends = [(e["type"], e.get("agent_id"), e["status"]) for e in events if e["type"] == "agent_finished"]
    assert sorted(ends) == [("agent_finished", "a1", "cancelled"), ("agent_finished", "a2", "cancelled")]
    for agent_id, call_id in (
        (e["agent_id"], e["parent_call_id"]) for e in events if e["type"] == "agent_started"
    ):
        kinds = [
            e["type"]
            for e in events
            if (e["type"] == "agent_finished" and e["agent_id"] == agent_id)
            or (e["type"] == "tool_finished" and e["call_id"] == call_id and not e.get("agent_id"))
        ]
        assert kinds == ["agent_finished", "tool_finished"]
    agents = events[-1]["agents"]
    assert [a["status"] for a in agents] == ["cancelled", "cancelled"]
    assert all(a["num_turns"] == 1 and a["usage"]["input_tokens"] > 0 for a in agents)
    assert b"Traceback" not in err
    for _ in range(50):
        if not any(pid_alive(pid) for pid in children):
            break
        time.sleep(0.1)
    assert not any(pid_alive(pid) for pid in children), "a child's command outlived the run"


def test_a_call_slow_to_stop_still_ends_before_the_result(project):
    """SIGTERM while one call of a message stops at once (a command) and another takes seconds (a
    subagent whose background process ignores SIGTERM): the run waits for both, so the stream
    still ends with `result` and that process is dead by then, not killed later or never."""
    from conftest import write_script

    stubborn = "trap '' TERM; echo $$ > bg.pid; sleep 60"
    write_script(
        project / "c1.jsonl",
        [
            call("execute_command", {"command": stubborn, "mode": "background"}),
            call("execute_command", {"command": "sleep 60"}),
            say("never"),
        ],
    )
    write_script(
        project / "s.jsonl",
        [
            calls(
                ("agent", {"prompt": "one", "description": "w", "model": "replay/c1.jsonl"}, "p1"),
                ("execute_command", {"command": "echo $$ > fg.pid; sleep 60"}, "p2"),
            ),
            say("never"),
        ],
    )
    code, events, err, (background, _) = _sigterm_once_running(project, ("bg.pid", "fg.pid"))
    assert code == 143, err
    assert [e["type"] for e in events].count("result") == 1
    assert events[-1]["type"] == "result" and events[-1]["status"] == "interrupted"
    finished = {
        e["call_id"]: e["status"] for e in events if e["type"] == "tool_finished" and not e.get("agent_id")
    }
    assert finished == {"tool#1": "cancelled", "tool#2": "cancelled"}
    assert b"Traceback" not in err
    assert not pid_alive(background), "the subagent's background process outlived the run"


def _git_project(project):
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (project / "a.txt").write_text("v1\n")
    git("add", "a.txt")
    git("commit", "-qm", "init")
    return git


def test_worktree_child_change_lands_as_one_checkpointed_patch(project, isolated_env):
    _git_project(project)
    (project / "a.txt").write_text("uncommitted\n")  # the child starts from the parent's state
    (project / "new.txt").write_text("untracked\n")
    out, _ = _run(
        project,
        [
            _spawn("Edit a.txt.", isolation="worktree"),
            call(
                "execute_command",
                {"command": "cat a.txt new.txt > seen.txt && printf 'child\\n' > a.txt"},
                "k1",
            ),
            say("edited"),
            say("landed"),
        ],
        "--safety",
        "full_access",
        "go",
    )
    assert out.code == 0, out.stderr
    assert (project / "a.txt").read_text() == "child\n"
    assert (project / "seen.txt").read_text() == "uncommitted\nuntracked\n"
    done = next(e for e in out.events if e["type"] == "agent_finished")
    assert done["status"] == "success"
    assert set(out.events[-1]["files_changed"]) >= {"a.txt", "seen.txt"}
    manifests = "".join(p.read_text() for p in (isolated_env / "data").rglob("*.json"))
    assert "subagent worktree patch" in manifests


def test_conflicting_worktree_patch_is_not_applied_and_is_saved(project):
    _git_project(project)
    command = f"printf 'parent\\n' > {project}/a.txt && printf 'child\\n' > a.txt"
    out, _ = _run(
        project,
        [
            _spawn("Edit a.txt.", isolation="worktree"),
            call("execute_command", {"command": command}, "k1"),
            say("edited"),
            say("conflict seen"),
        ],
        "--safety",
        "full_access",
        "go",
    )
    assert out.code == 0, out.stderr
    assert (project / "a.txt").read_text() == "parent\n"  # never forced
    finished = next(e for e in out.events if e["type"] == "tool_finished" and e["name"] == "agent")
    assert finished["status"] == "error" and "does not apply" in finished["error"]
    saved = list((project / ".mermaid" / "conversations").rglob("a1.patch"))
    assert saved and "+child" in saved[0].read_text()


def test_worktree_spawn_outside_git_is_refused(project):
    out, _ = _run(
        project,
        [_spawn("Edit a.txt.", isolation="worktree"), say("refused")],
        "--safety",
        "full_access",
        "go",
    )
    assert out.code == 0, out.stderr
    finished = next(e for e in out.events if e["type"] == "tool_finished" and e["name"] == "agent")
    assert finished["status"] == "error" and "needs a git repository" in finished["error"]
    assert not any(e["type"] == "agent_started" for e in out.events)


def test_allow_untrusted_tools_lets_a_headless_spawn_through(project):
    script = [_spawn("Say hi."), say("hi"), say("done")]
    blocked, _ = _run(project, script, "--safety", "ask", "go")
    assert blocked.code == 3, blocked.stderr
    assert not any(e["type"] == "agent_started" for e in blocked.events)
    allowed, _ = _run(project, script, "--safety", "ask", "--allow-untrusted-tools", "go")
    assert allowed.code == 0, allowed.stderr
    assert next(e for e in allowed.events if e["type"] == "agent_started")["agent_id"] == "a1"


def test_child_timeout_stops_the_child_and_the_run_goes_on(project, isolated_env):
    _user_config(isolated_env, "[agents]\ntimeout = 1\n")
    out, _ = _run(
        project,
        [
            _spawn("Wait."),
            call("execute_command", {"command": "sleep 30"}, "k1"),
            say("the child timed out"),  # the child never makes its second request
        ],
        "--safety",
        "full_access",
        "go",
    )
    assert out.code == 0, out.stderr
    finished = next(e for e in out.events if e["type"] == "agent_finished")
    assert finished["status"] == "timeout"
    assert out.events[-1]["response"] == "the child timed out"


def test_agents_deny_servers_keeps_a_server_from_every_child(project, isolated_env):
    import sys
    from pathlib import Path

    basic = Path(__file__).parent / "mcp_servers" / "basic.py"
    _user_config(
        isolated_env,
        f'mcp_defer_tools = false\n[agents]\ndeny_servers = ["basic"]\n'
        f'[mcp_servers.basic]\ncommand = "{sys.executable}"\nargs = ["{basic}"]\n',
    )
    out, requests = _run(
        project,
        [
            _spawn("Echo hi with the basic server."),
            call("mcp__basic__echo", {"text": "hi"}, "k1"),
            say("the server is not there"),
            say("done"),
        ],
        "--safety",
        "full_access",
        "go",
    )
    assert out.code == 0, out.stderr
    parent_tools = {t["name"] for t in requests[0]["body"]["tools"]}
    child_tools = {t["name"] for t in requests[1]["body"]["tools"]}
    assert "mcp__basic__echo" in parent_tools and "mcp__basic__echo" not in child_tools
    echo = next(e for e in _child_events(out, "a1") if e["type"] == "tool_finished")
    assert echo["status"] == "error"
