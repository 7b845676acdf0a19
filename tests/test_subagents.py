"""The `agent` tool in real runs against the fake provider server: each child is its own
conversation (the server answers requests in order, parent and children alike), its authority
only narrows, its events are tagged into the parent's stream and its spending is the run's."""

from __future__ import annotations

import json

from conftest import call, run_inprocess, say
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
