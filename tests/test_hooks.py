"""before_tool_use hooks, with real subprocesses."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from mermaid_cli.policy.hooks import OUTPUT_CAP, HookSpec, run_before_tool_use

CALL = {"call_id": "tool#1", "tool": "execute_command", "arguments": {"command": "ls"}, "turn_id": 1}
PY = sys.executable


def script(tmp_path: Path, name: str, body: str) -> HookSpec:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return HookSpec(command=str(path), name=name)


def printing(tmp_path: Path, name: str, obj: object) -> HookSpec:
    out = tmp_path / f"{name}.json"
    out.write_text(json.dumps(obj))
    return script(tmp_path, name, f"cat > /dev/null\ncat '{out}'\n")


async def test_no_hooks_no_opinion() -> None:
    out = await run_before_tool_use([], CALL)
    assert out.decision is None and out.warnings == []


async def test_claude_code_shape(tmp_path: Path) -> None:
    hook = printing(
        tmp_path,
        "guard",
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "writes under /etc are not allowed here",
            }
        },
    )
    out = await run_before_tool_use([hook], CALL)
    assert out.decision == "deny" and out.reason == "writes under /etc are not allowed here"
    assert out.denied_by == "guard"


async def test_allow_ask_updated_input_and_context(tmp_path: Path) -> None:
    allow = printing(
        tmp_path, "a", {"hookSpecificOutput": {"permissionDecision": "allow"}, "additionalContext": "ctx-a"}
    )
    ask = printing(
        tmp_path,
        "b",
        {"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "check"}},
    )
    rewrite1 = printing(
        tmp_path,
        "c",
        {"hookSpecificOutput": {"updatedInput": {"command": "ls -1"}, "additionalContext": "ctx-c"}},
    )
    rewrite2 = printing(tmp_path, "d", {"hookSpecificOutput": {"updatedInput": {"command": "ls -2"}}})
    out = await run_before_tool_use([allow], CALL)
    assert out.decision == "allow"
    out = await run_before_tool_use([allow, ask, rewrite1, rewrite2], CALL)
    assert out.decision == "ask" and out.reason == "check"
    assert out.updated_input == {"command": "ls -2"}
    assert out.additional_context == "ctx-a\nctx-c"
    assert any("last one wins" in w for w in out.warnings)


async def test_legacy_shape(tmp_path: Path) -> None:
    block = printing(tmp_path, "legacy", {"decision": "block", "reason": "nope"})
    out = await run_before_tool_use([block], CALL)
    assert (out.decision, out.reason) == ("deny", "nope")
    approve = printing(tmp_path, "legacy2", {"decision": "approve", "reason": "fine", "systemMessage": "hi"})
    out = await run_before_tool_use([approve], CALL)
    assert out.decision == "allow" and out.system_messages == ["hi"]


async def test_exit_2_denies_with_stderr(tmp_path: Path) -> None:
    hook = script(tmp_path, "exit2", "cat >/dev/null\necho 'no rm here' >&2\nexit 2\n")
    out = await run_before_tool_use([hook], CALL)
    assert out.decision == "deny" and out.reason == "no rm here"


async def test_first_deny_wins(tmp_path: Path) -> None:
    d1 = script(tmp_path, "d1", "echo first >&2; exit 2\n")
    d2 = printing(tmp_path, "d2", {"decision": "block", "reason": "second"})
    allow = printing(tmp_path, "ok", {"hookSpecificOutput": {"permissionDecision": "allow"}})
    out = await run_before_tool_use([allow, d1, d2], CALL)
    assert out.decision == "deny" and out.reason == "first" and out.denied_by == "d1"


async def test_call_json_on_stdin_and_cleared_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SUPER_SECRET_TOKEN", "hunter2hunter2")
    seen = tmp_path / "stdin.json"
    env_dump = tmp_path / "env.txt"
    hook = HookSpec(command=f"cat > '{seen}'; env > '{env_dump}'", name="spy")
    out = await run_before_tool_use([hook], CALL)
    assert out.decision is None and out.warnings == []
    assert json.loads(seen.read_text()) == CALL
    env = dict(line.split("=", 1) for line in env_dump.read_text().splitlines() if "=" in line)
    assert env["MERMAID_HOOK_EVENT"] == "before_tool_use"
    assert env["MERMAID_PLUGIN_NAME"] == "spy"
    assert env["PATH"] == os.environ["PATH"]
    assert "SUPER_SECRET_TOKEN" not in env and "hunter2hunter2" not in env_dump.read_text()
    # /bin/sh itself may add PWD, SHLVL, OLDPWD and _
    assert set(env) <= {
        "PATH",
        "HOME",
        "MERMAID_HOOK_EVENT",
        "MERMAID_PLUGIN_NAME",
        "PWD",
        "SHLVL",
        "OLDPWD",
        "_",
    }


async def test_hook_that_sleeps_forever_does_not_hang(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    hook = script(tmp_path, "sleeper", f"sleep 1000 &\necho $! > '{pidfile}'\nwait\n")
    out = await run_before_tool_use([hook], CALL, timeout=0.5)
    assert out.decision is None
    assert any("timed out" in w for w in out.warnings)
    child = int(pidfile.read_text())
    # the grandchild was killed with the hook's process group (dead or a zombie awaiting reaping)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{child}/stat").read_text().split(")")[-1].split()[0]
        except FileNotFoundError:
            break
        if state in ("Z", "X"):
            break
        time.sleep(0.05)
    else:
        raise AssertionError("grandchild still running")


async def test_deny_survives_a_background_child_holding_the_pipes(tmp_path: Path) -> None:
    hook = script(tmp_path, "bg", 'echo \'{"decision": "block", "reason": "bg"}\'\nsleep 60 &\nexit 0\n')
    out = await run_before_tool_use([hook], CALL, timeout=8)
    assert out.decision == "deny" and out.reason == "bg"


async def test_crash_junk_and_missing_are_warnings_not_denials(tmp_path: Path) -> None:
    crash = script(tmp_path, "crash", "echo oops >&2; exit 1\n")
    junk = script(tmp_path, "junk", "echo 'this is not json'\n")
    not_obj = script(tmp_path, "list", "echo '[1, 2]'\n")
    missing = HookSpec(command=str(tmp_path / "does-not-exist"), name="missing")
    bad_decision = printing(tmp_path, "weird", {"hookSpecificOutput": {"permissionDecision": "maybe"}})
    out = await run_before_tool_use([crash, junk, not_obj, missing, bad_decision], CALL)
    assert out.decision is None
    text = "\n".join(out.warnings)
    assert "crash" in text and "status 1" in text and "oops" in text
    assert "not JSON" in text and "not an object" in text and "missing" in text and "maybe" in text


async def test_large_output_is_capped(tmp_path: Path) -> None:
    hook = HookSpec(command=f"{PY} -c \"import sys; sys.stdout.write('x' * 1000000)\"", name="big")
    out = await run_before_tool_use([hook], CALL)
    assert out.decision is None and any("not JSON" in w for w in out.warnings)
    assert OUTPUT_CAP == 64 * 1024


async def test_hook_that_ignores_stdin(tmp_path: Path) -> None:
    # A hook that never reads its (large) stdin must not wedge the writer.
    hook = printing(tmp_path, "deaf", {"decision": "approve"})
    big_call = {**CALL, "arguments": {"content": "y" * 2_000_000}}
    hook = HookSpec(command=f"cat '{tmp_path / 'deaf.json'}'", name="deaf")
    out = await run_before_tool_use([hook], big_call, timeout=5)
    assert out.decision == "allow"
