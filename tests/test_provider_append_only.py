"""Append-only conversations, end to end: every request a run sends extends the one before.

`mermaid exec` runs against the fake provider server on each wire protocol through image reads
(more than the old three-image window), a native-tool rejection, a 500, a cut stream, a reply cut
by the output limit (on Responses one that holds only a reasoning item), a failing `--verify` round
and the `--output-schema` turn. The server's request log must show each request's conversation as
a prefix-extension of the previous one (cache breakpoints aside), the same system prompt and, once
the native tools are refused, the same tools; the Anthropic cache breakpoints sit on that prefix.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from conftest import run_inprocess
from provider_fixtures import (
    FAKE_KEY,
    FakeProviderServer,
    fake_env,
    validate_anthropic_request,
    validate_chat_request,
    validate_responses_request,
)

# a 1x1 PNG
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)
IMAGES = ("a.png", "b.png", "c.png", "d.png", "e.png")
MODELS = {
    "anthropic/claude-sonnet-4-5": "anthropic",
    "openai/gpt-5": "responses",
    "groq/llama-3.3-70b": "chat",
}
CONVERSATION_KEY = {"anthropic": "messages", "responses": "input", "chat": "messages"}
SYSTEM_KEY = {"anthropic": "system", "responses": "instructions", "chat": None}
VALIDATE = {
    "anthropic": validate_anthropic_request,
    "responses": validate_responses_request,
    "chat": validate_chat_request,
}


def _read(call_id: str, path: str) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": "read_file", "arguments": {"path": path}}


def _script(api: str) -> list[dict[str, Any]]:
    cut: list[dict[str, Any]] = [{"type": "text", "text": "The images show one pixel"}]
    if api == "responses":  # cut off while reasoning: the output holds only a reasoning item
        cut = [{"type": "reasoning", "text": "thinking about pixels"}]
    return [
        {"type": "fault", "kind": "reject_native_tools"},
        {
            "type": "turn",
            "content": [{"type": "reasoning", "text": "look first"}, _read("c1", "a.png")],
        },
        {"type": "fault", "kind": "http_500"},
        {"type": "turn", "content": [_read("c2", "b.png")]},
        {"type": "fault", "kind": "stream_cut"},
        {"type": "turn", "content": [_read("c3", "c.png"), _read("c4", "d.png"), _read("c5", "e.png")]},
        {"type": "turn", "content": cut, "stop_reason": "length"},
        {"type": "turn", "content": [{"type": "text", "text": "Five one-pixel images."}]},
        # --verify fails (ok.txt is missing): the feedback round writes it
        {
            "type": "turn",
            "content": [
                {
                    "type": "tool_call",
                    "id": "c6",
                    "name": "write_file",
                    "arguments": {"path": "ok.txt", "content": "ok\n"},
                }
            ],
        },
        {"type": "turn", "content": [{"type": "text", "text": "Fixed."}]},
        # the --output-schema turn
        {"type": "turn", "content": [{"type": "text", "text": '{"verdict": "ok"}'}]},
    ]


def _strip_cache(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_cache(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache(v) for v in value]
    return value


def _breakpoints(messages: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i, m in enumerate(messages)
        for j, b in enumerate(m["content"] if isinstance(m["content"], list) else [])
        if "cache_control" in b
    ]


def _run(project: Any, isolated_env: Any, model: str, server: FakeProviderServer) -> Any:
    for name in IMAGES:
        (project / name).write_bytes(PNG)
    (project / "schema.json").write_text(
        json.dumps({"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]})
    )
    env = fake_env(server)
    if model.startswith("groq/"):
        env["GROQ_API_KEY"] = FAKE_KEY
        cfg = isolated_env / "config" / "config.toml"
        cfg.parent.mkdir(parents=True, exist_ok=True)
        cfg.write_text(
            f'[providers.groq]\nbase_url = "{server.url}/v1"\napi = "chat"\n\n[models."{model}"]\nvision = true\n'
        )
    args = ["--json", "--model", model, "--verify", "test -f ok.txt", "--output-schema", "schema.json"]
    return run_inprocess([*args, "describe the five images"], project, env=env)


@pytest.mark.parametrize("model", list(MODELS))
def test_every_request_extends_the_previous_one(project, isolated_env, model):
    api = MODELS[model]
    with FakeProviderServer(_script(api)) as server:
        out = _run(project, isolated_env, model, server)
        requests = [r["body"] for r in server.requests]
    assert out.code == 0, out.stderr + out.stdout
    assert out.events[-1]["structured_output"] == {"verdict": "ok"}
    assert server.remaining == 0
    key = CONVERSATION_KEY[api]
    conversations = [_strip_cache(body[key]) for body in requests]
    for n, (before, after) in enumerate(zip(conversations, conversations[1:], strict=False)):
        assert after[: len(before)] == before, f"request {n + 2} rewrote what request {n + 1} sent"
    for body in requests:
        VALIDATE[api](body)
    system = SYSTEM_KEY[api]
    if system is not None:
        assert all(body[system] == requests[0][system] for body in requests)
    # The first request offered the native tools (refused, where the protocol has them); every
    # request after it offers the same tools, the --output-schema turn included.
    tools = [json.dumps(_strip_cache(body.get("tools")), sort_keys=True) for body in requests[1:]]
    assert len(set(tools)) == 1
    # every image that was read is still in the last request, once each
    last = json.dumps(requests[-1][key])
    assert last.count(base64.b64encode(PNG).decode()) == len(IMAGES)
    final = requests[-1]
    if api == "anthropic":
        assert final["output_config"]["format"]["type"] == "json_schema"
        assert final["tool_choice"] == {"type": "none"}
        for body in requests:
            assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
            (spot,) = _breakpoints(body["messages"])
            assert spot == (len(body["messages"]) - 1, len(body["messages"][-1]["content"]) - 1)
        # each breakpoint sits on the prefix the next request repeats
        for before, after in zip(requests, requests[1:], strict=False):
            i, j = _breakpoints(before["messages"])[0]
            assert _strip_cache(after["messages"][i]["content"][j]) == _strip_cache(
                before["messages"][i]["content"][j]
            )
    elif api == "responses":
        assert final["text"]["format"]["type"] == "json_schema" and final["tool_choice"] == "none"
        # the reply cut while reasoning never went back as a lone reasoning item
        for body in requests:
            items = body["input"]
            for a, b in zip(items, [*items[1:], None], strict=False):
                if a.get("type") == "reasoning":
                    assert (
                        b is not None and b.get("role") != "user" and b.get("type") != "function_call_output"
                    )
    else:
        assert final["response_format"]["type"] == "json_schema" and final["tool_choice"] == "none"


# --- compaction: the one place the working context is rewritten ---------------------------------

SUMMARY = "## Goal\nlook\n## Decisions\nnone\n## Files touched\nnone\n## Open items\nnone"
SUMMARISER = {
    "type": "match",
    "system_contains": "checkpoint summaries",
    "turn": {"content": [{"type": "text", "text": SUMMARY}]},
}


def _summaries(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in requests if "checkpoint summaries" in json.dumps(b.get("system"))]


def test_a_full_context_window_compacts_and_continues(project):
    script = [
        SUMMARISER,
        {"type": "turn", "content": [_read("c1", "a.png")]},
        {
            "type": "turn",
            "content": [{"type": "text", "text": "Half an answer"}],
            "stop_reason": "model_context_window_exceeded",
        },
        {"type": "turn", "content": [{"type": "text", "text": ", and the rest."}]},
    ]
    (project / "a.png").write_bytes(PNG)
    with FakeProviderServer(script) as server:
        out = run_inprocess(
            ["--json", "--model", "anthropic/claude-sonnet-4-5", "go"], project, env=fake_env(server)
        )
        requests = [r["body"] for r in server.requests]
    assert out.code == 0, out.stderr
    assert out.events[-1]["status"] == "success"
    assert out.events[-1]["response"] == "Half an answer, and the rest."
    stops = [e["stop_reason"] for e in out.events if e["type"] == "turn_done"]
    assert stops == ["tool_use", "context_window_exceeded", "compaction", "stop"]
    assert len(_summaries(requests)) == 1
    last = json.dumps(requests[-1]["messages"])
    assert "[Checkpoint" in last and "Continue exactly where it stopped" in last


def test_images_are_freed_by_compaction_not_by_editing_sent_turns(project):
    names = [f"i{n}.png" for n in range(12)]
    for name in names:
        (project / name).write_bytes(PNG)
    rounds = [names[0:4], names[4:8], names[8:12]]
    script = [
        SUMMARISER,
        *({"type": "turn", "content": [_read(f"c{n}", p) for p in r]} for n, r in enumerate(rounds)),
        {"type": "turn", "content": [{"type": "text", "text": "Seen."}]},
    ]
    with FakeProviderServer(script) as server:
        out = run_inprocess(
            ["--json", "--model", "anthropic/claude-sonnet-4-5", "look"], project, env=fake_env(server)
        )
        requests = [r["body"] for r in server.requests if r["body"] not in _summaries([r["body"]])]
    assert out.code == 0, out.stderr
    image = base64.b64encode(PNG).decode()
    counts = [json.dumps(b["messages"]).count(image) for b in requests]
    # every image stays in the requests that follow it, until the compaction frees all but the newest
    assert counts == [0, 4, 8, 4]
    conversations = [_strip_cache(b["messages"]) for b in requests[:3]]
    for before, after in zip(conversations, conversations[1:], strict=False):
        assert after[: len(before)] == before
