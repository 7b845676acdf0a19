"""`[compaction] provider_native`: server-side compaction, through scripted runs against the fake
provider server on the Anthropic Messages and OpenAI Responses wire protocols.

The fake answers a turn scripted with `"compaction"` with a compaction block (item) only when the
request asked for server-side compaction, as the real APIs do once the input crosses the trigger.
Every request body is checked against the vendor SDK's own request types.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import run_inprocess
from provider_fixtures import (
    FakeProviderServer,
    fake_env,
    fake_provider,
    validate_anthropic_beta_request,
    validate_anthropic_request,
    validate_responses_request,
    validate_sdk_event,
)

SUMMARY = "## Goal\nwrite a.txt\n## Decisions\nnone\n## Files touched\na.txt\n## Open items\nnone"
SUMMARISER = {
    "type": "match",
    "system_contains": "checkpoint summaries",
    "turn": {"content": [{"type": "text", "text": SUMMARY}]},
}
#: window 100000 at 85 %: both compactions are due from 85000 input tokens on
WINDOW = ["-c", "compaction.context_window=100000", "-c", "compaction.tail_turns=0"]
NATIVE = ["-c", "compaction.provider_native=true"]
SUPPORTED = {"anthropic/claude-sonnet-4-6": "anthropic", "openai/gpt-5.2": "responses"}
CONVERSATION = {"anthropic": "messages", "responses": "input"}


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_call", "id": cid, "name": name, "arguments": args}


def _script() -> list[dict[str, Any]]:
    return [
        SUMMARISER,
        # the input passes the threshold here: our compaction would be due before the next call
        {
            "type": "turn",
            "content": [_call("c1", "write_file", {"path": "a.txt", "content": "a\n"})],
            "usage": {"input_tokens": 90_000, "output_tokens": 20},
        },
        # the server compacts (when asked) and answers in the same reply
        {
            "type": "turn",
            "compaction": "The user asked for a.txt; it is written.",
            "content": [_call("c2", "context_check", {})],
            "usage": {"input_tokens": 4_000, "output_tokens": 50},
        },
        {"type": "turn", "content": [{"type": "text", "text": "done"}], "usage": {"input_tokens": 4_100}},
    ]


def _strip_cache(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_cache(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache(v) for v in value]
    return value


def _run(project: Any, model: str, *extra: str) -> tuple[Any, list[dict[str, Any]]]:
    with FakeProviderServer(_script()) as server:
        out = run_inprocess(
            ["--json", *WINDOW, *extra, "--model", model, "write a.txt"], project, env=fake_env(server)
        )
        requests = list(server.requests)
    return out, requests


def _compaction_parts(conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The compaction blocks (Anthropic) or items (Responses) in a request's conversation."""
    parts = [b for m in conversation if isinstance(m.get("content"), list) for b in m["content"]]
    return [p for p in [*conversation, *parts] if p.get("type") == "compaction"]


def _summaries(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def system(body: dict[str, Any]) -> str:
        return json.dumps(body.get("system") or body.get("instructions") or "")

    return [r for r in requests if "checkpoint summaries" in system(r["body"])]


@pytest.mark.parametrize("model", list(SUPPORTED))
def test_the_provider_compacts_and_its_block_goes_back_verbatim(project, model):
    api = SUPPORTED[model]
    out, requests = _run(project, model, *NATIVE)
    assert out.code == 0, out.stderr + out.stdout
    assert out.events[-1]["response"] == "done"
    bodies = [r["body"] for r in requests]
    assert len(bodies) == 3 and not _summaries(requests), "our own compaction must not also run"
    for request in requests:
        body = request["body"]
        if api == "anthropic":
            validate_anthropic_beta_request(body)
            assert body["context_management"] == {
                "edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 85_000}}]
            }
            assert "compact-2026-01-12" in request["headers"]["anthropic-beta"]
            # the conversation stays the last key (the cacheable prefix is everything before it)
            assert list(body)[-1] == "messages"
        else:
            validate_responses_request(body)
            assert body["context_management"] == [{"type": "compaction", "compact_threshold": 85_000}]
            assert list(body)[-1] == "input"
    key = CONVERSATION[api]
    conversations = [_strip_cache(b[key]) for b in bodies]
    for n, (before, after) in enumerate(zip(conversations, conversations[1:], strict=False)):
        assert after[: len(before)] == before, f"request {n + 2} rewrote what request {n + 1} sent"
    last = conversations[-1]
    if api == "anthropic":
        (compacted,) = [m for m in last if m["content"][0].get("type") == "compaction"]
        # exactly the block the server streamed, every field of it
        assert compacted["content"][0] == {
            "type": "compaction",
            "content": "The user asked for a.txt; it is written.",
            "encrypted_content": "enc_cmp_fake_2",
            "signature": "sig_cmp_fake_2",
        }
        assert compacted["role"] == "assistant" and compacted["content"][1]["type"] == "tool_use"
        # the compaction's own tokens (usage.iterations) are billed with the reply's
        usage = [e["usage"] for e in out.events if e["type"] == "turn_done"][1]
        assert (usage["input_tokens"], usage["output_tokens"]) == (4_000 + 900, 50 + 300)
    else:
        (item,) = [i for i in last if i.get("type") == "compaction"]
        assert item == {
            "type": "compaction",
            "id": "cmp_fake_2",
            "encrypted_content": "enc_cmp_fake_2:" + ("The user asked for a.txt; it is written."),
        }
        after = last[last.index(item) + 1]
        assert after["type"] == "function_call" and after["name"] == "context_check"
    # context_check knows the provider compacts, and that it did
    (report,) = [
        e["output"] for e in out.events if e["type"] == "tool_finished" and e["name"] == "context_check"
    ]
    assert "before the provider compacts the context server-side at 85%" in report
    assert "Compactions so far: 1, 1 of them by the provider server-side" in report
    assert out.stderr.count("the provider compacted the context server-side") == 1
    assert "has no server-side compaction" not in out.stderr


@pytest.mark.parametrize("model", list(SUPPORTED))
def test_provider_native_off_sends_nothing_new(project, model):
    api = SUPPORTED[model]
    out, requests = _run(project, model)
    assert out.code == 0, out.stderr + out.stdout
    turns = [r for r in requests if r not in _summaries(requests)]
    assert len(_summaries(requests)) == 1, "our own compaction runs at the threshold"
    for request in requests:
        body = request["body"]
        assert "context_management" not in body
        assert not _compaction_parts(body[CONVERSATION[api]])
        if api == "anthropic":
            validate_anthropic_request(body)  # no beta-only parameter at all
            assert "compact-2026-01-12" not in request["headers"].get("anthropic-beta", "")
        else:
            validate_responses_request(body)
    assert len(turns) == 3
    assert "the provider compacted" not in out.stderr


def test_a_model_without_server_side_compaction_falls_back_to_ours(project):
    out, requests = _run(project, "anthropic/claude-sonnet-4-5", *NATIVE)
    assert out.code == 0, out.stderr + out.stdout
    warnings = [line for line in out.stderr.splitlines() if "provider_native" in line]
    assert warnings == [
        "mermaid: [compaction] provider_native: anthropic/claude-sonnet-4-5 has no server-side "
        "compaction; Mermaid compacts the context itself"
    ]
    assert len(_summaries(requests)) == 1
    for request in requests:
        assert "context_management" not in request["body"]
        validate_anthropic_request(request["body"])


def test_the_fake_streams_a_compaction_block_the_sdk_accepts():
    from anthropic.types.beta import BetaRawMessageStreamEvent

    turn = {
        "content": [
            {"type": "compaction", "content": "summary", "encrypted_content": "e", "signature": "s"},
            {"type": "text", "text": "hi"},
        ],
        "_compacted": True,
    }
    events = fake_provider._anthropic_events(turn, "claude-sonnet-4-6", 1)
    kinds = [data["type"] for _, data in events]
    assert kinds[2:4] == ["content_block_start", "content_block_delta"]
    for _, data in events:
        if data["type"] != "ping":
            validate_sdk_event(BetaRawMessageStreamEvent, data)


def test_a_resumed_session_sends_the_compaction_block_back(project):
    model = "anthropic/claude-sonnet-4-6"
    with FakeProviderServer(_script()) as server:
        first = run_inprocess(
            ["--json", *WINDOW, *NATIVE, "--model", model, "write a.txt"], project, env=fake_env(server)
        )
        before = server.requests[-1]["body"]["messages"]
        server.add({"type": "turn", "content": [{"type": "text", "text": "still done"}]})
        sid = first.events[0]["session_id"]
        again = run_inprocess(
            ["--json", *WINDOW, *NATIVE, "--resume", sid, "--model", model, "and now?"],
            project,
            env=fake_env(server),
        )
        after = server.requests[-1]
    assert first.code == 0 and again.code == 0, again.stderr
    assert again.events[-1]["response"] == "still done"
    validate_anthropic_beta_request(after["body"])
    assert "compact-2026-01-12" in after["headers"]["anthropic-beta"]
    # the session file kept the block whole: the resumed request extends the last one sent
    messages = _strip_cache(after["body"]["messages"])
    assert messages[: len(before)] == _strip_cache(before)
    assert len(_compaction_parts(messages)) == 1
