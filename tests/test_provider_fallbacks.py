"""Fallbacks that read the error, against the fake server: OpenAI's organization-verification 400s
(streaming, reasoning summaries), a refused structured-output parameter, and Gemini 3's signed
chat tool calls; each fallback is tried once, remembered for the run, and leaves the conversation
as it was (only top-level parameters change)."""

from __future__ import annotations

from typing import Any

import pytest
from provider_fixtures import FakeProviderServer, RecordingSink, call, endpoint, fault, text, turn

from mermaid_cli.core.errors import ProviderError
from mermaid_cli.core.types import (
    CONTEXT_FULL,
    Message,
    ToolCallBlock,
    ToolResultBlock,
    ToolSpec,
    TurnRequest,
)
from mermaid_cli.providers.anthropic import AnthropicProvider
from mermaid_cli.providers.openai_chat import OpenAIChatProvider
from mermaid_cli.providers.openai_chat import _call as chat_call
from mermaid_cli.providers.openai_responses import OpenAIResponsesProvider

TOOLS = (ToolSpec(name="read_file", description="read", input_schema={"type": "object", "properties": {}}),)
SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string"}}}


def request(*messages: Message, **kw: Any) -> TurnRequest:
    return TurnRequest(system="s", messages=messages or (Message.user_text("hi"),), tools=TOOLS, **kw)


def responses(server: FakeProviderServer) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(endpoint(server, "openai", "gpt-5"))


def chat(server: FakeProviderServer, provider: str = "openai", model: str = "gpt-4.1") -> OpenAIChatProvider:
    return OpenAIChatProvider(endpoint(server, provider, model))


def bodies(server: FakeProviderServer) -> list[dict[str, Any]]:
    return [r["body"] for r in server.requests]


async def test_unverified_reasoning_summary_is_left_out_for_the_rest_of_the_run() -> None:
    script = [fault("unverified_summary"), turn(text("one")), fault("unverified_summary"), turn(text("two"))]
    with FakeProviderServer(script) as server:
        provider, sink = responses(server), RecordingSink()
        first = await provider.turn(request(reasoning="high"), sink)
        second = await provider.turn(request(reasoning="high"), sink)
        await provider.aclose()
        sent = bodies(server)
    assert first.message.text == "one" and second.message.text == "two"
    assert [code for _, code in sink.retries] == ["reasoning_summary_rejected"]
    assert "verified" in sink.retries[0][0]
    # asked once with the summary, then never again; the effort stays
    assert sent[0]["reasoning"] == {"effort": "high", "summary": "auto"}
    assert [b["reasoning"] for b in sent[1:]] == [{"effort": "high"}, {"effort": "high"}]
    assert all(b["input"] == sent[0]["input"] for b in sent)


@pytest.mark.parametrize("api", ["responses", "chat"])
async def test_unverified_streaming_falls_back_to_whole_responses(api: str) -> None:
    script = [
        fault("unverified_stream"),
        turn(text("looking"), call("c1", "read_file", {"path": "a"})),
        turn(text("done")),
    ]
    with FakeProviderServer(script) as server:
        provider = responses(server) if api == "responses" else chat(server)
        sink = RecordingSink()
        first = await provider.turn(request(), sink)
        history = (Message.user_text("hi"), first.message)
        second = await provider.turn(request(*history), sink)
        await provider.aclose()
        sent = bodies(server)
    assert [code for _, code in sink.retries] == ["stream_rejected"]
    assert [b["stream"] for b in sent] == [True, False, False]
    (tool_call,) = first.message.tool_calls
    assert tool_call.name == "read_file" and tool_call.arguments == {"path": "a"}
    assert first.stop_reason == "tool_use" and second.message.text == "done"
    assert first.usage is not None and first.usage.output_tokens > 0
    assert "".join(sink.texts) == "lookingdone"  # whole responses still reach the sink


async def test_verification_text_elsewhere_is_not_a_fallback() -> None:
    # the refusal only counts for what the request asked for: a non-reasoning model sends no summary
    script = [fault("unverified_summary"), turn(text("ok"))]
    with FakeProviderServer(script) as server:
        provider, sink = chat(server), RecordingSink()
        await provider.turn(request(), sink)
        await provider.aclose()
    assert sink.retries == [] and len(server.requests) == 1


@pytest.mark.parametrize("api", ["anthropic", "responses", "chat"])
async def test_a_refused_output_format_is_dropped_once(api: str) -> None:
    script = [fault("reject_format"), turn(text('{"verdict": "ok"}')), turn(text('{"verdict": "again"}'))]
    with FakeProviderServer(script) as server:
        provider: Any
        if api == "anthropic":
            provider = AnthropicProvider(endpoint(server, "anthropic", "claude-sonnet-4-5"))
        else:
            provider = responses(server) if api == "responses" else chat(server)
        sink = RecordingSink()
        result = await provider.turn(request(response_schema=SCHEMA), sink)
        await provider.turn(request(response_schema=SCHEMA), sink)
        await provider.aclose()
        sent = bodies(server)
    assert result.message.text == '{"verdict": "ok"}'
    assert [code for _, code in sink.retries] == ["output_format_rejected"]
    key = {"anthropic": "output_config", "responses": "text", "chat": "response_format"}[api]
    assert key in sent[0] and all(key not in b for b in sent[1:])
    # the tools stay, uncallable, on every format request
    none = {"type": "none"} if api == "anthropic" else "none"
    assert all(b["tool_choice"] == none and b["tools"] == sent[0]["tools"] for b in sent)


async def test_a_bad_request_that_names_no_fallback_is_final() -> None:
    with FakeProviderServer([fault("reject_format"), turn(text("x"))]) as server:
        provider, sink = responses(server), RecordingSink()
        await provider.turn(request(), sink)  # no schema sent: the fault lets the turn through
        await provider.aclose()
    assert sink.retries == []
    with FakeProviderServer([fault("context_too_long")]) as server:
        provider = responses(server)
        with pytest.raises(ProviderError):
            await provider.turn(request(response_schema=SCHEMA), RecordingSink())
        await provider.aclose()
        assert len(server.requests) == 1


async def test_gemini_thought_signatures_go_back_with_their_calls() -> None:
    signed = call("c1", "read_file", {"path": "a"}, signature="sig-opaque-123")
    with FakeProviderServer([turn(signed), turn(text("done"))]) as server:
        provider = chat(server, "gemini", "gemini-3-pro-preview")
        first = await provider.turn(request(), RecordingSink())
        (block,) = first.message.tool_calls
        history = (
            Message.user_text("hi"),
            first.message,
            Message(role="user", content=(_result("c1"),)),
        )
        await provider.turn(request(*history), RecordingSink())
        await provider.aclose()
        sent = bodies(server)
    assert block.signature == "sig-opaque-123"
    assistant = sent[1]["messages"][2]
    assert assistant["tool_calls"][0]["extra_content"] == {"google": {"thought_signature": "sig-opaque-123"}}
    # an unsigned call sends no extra_content (the strict OpenAI types have no such field)
    plain = ToolCallBlock(id="c2", name="read_file", arguments={})
    assert "extra_content" not in chat_call(plain)


def _result(call_id: str) -> ToolResultBlock:
    return ToolResultBlock(call_id=call_id, content="contents")


async def test_anthropic_context_window_stop_is_typed() -> None:
    script = [turn(text("half an answer"), stop_reason="model_context_window_exceeded")]
    with FakeProviderServer(script) as server:
        provider = AnthropicProvider(endpoint(server))
        result = await provider.turn(request(), RecordingSink())
        await provider.aclose()
    assert result.stop_reason == CONTEXT_FULL and result.message.text == "half an answer"
