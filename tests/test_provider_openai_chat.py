"""The Chat Completions client against the fake server; request bodies validated with the SDK's types."""

from __future__ import annotations

from provider_fixtures import (
    FAKE_KEY,
    FakeProviderServer,
    RecordingSink,
    call,
    endpoint,
    text,
    turn,
    validate_chat_request,
)

from mermaid_cli.config.sections.models import ModelSettings
from mermaid_cli.core.types import (
    ImageData,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSpec,
    TurnRequest,
)
from mermaid_cli.providers.http import Endpoint, split_last_item
from mermaid_cli.providers.models import facts_for
from mermaid_cli.providers.openai_chat import OpenAIChatProvider

TOOLS = (
    ToolSpec(
        name="read_file",
        description="read",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
    ),
)

LLAMA_SETTINGS = ModelSettings(thinking="effort", efforts=["low", "medium", "high"])


def request(*messages: Message, **kw) -> TurnRequest:
    return TurnRequest(system="sys", messages=messages or (Message.user_text("hi"),), tools=TOOLS, **kw)


def bodies(server) -> list[dict]:
    out = [r["body"] for r in server.requests]
    for body in out:
        validate_chat_request(body)
    return out


async def test_parallel_tool_calls_are_accumulated_by_index() -> None:
    script = [
        turn(
            {"type": "reasoning", "text": "hmm, two files"},
            text("Looking."),
            call("call_a", "read_file", {"path": "a" * 60}),
            call("call_b", "read_file", {"path": "b"}),
            usage={"input_tokens": 20, "output_tokens": 8, "cache_read_input_tokens": 100},
        )
    ]
    with FakeProviderServer(script) as server:
        facts = facts_for("groq/llama-3.3-70b", {"groq/llama-3.3-70b": LLAMA_SETTINGS})
        provider = OpenAIChatProvider(endpoint(server, "groq", "llama-3.3-70b", facts=facts))
        sink = RecordingSink()
        result = await provider.turn(request(max_output_tokens=99, reasoning="low"), sink)
        await provider.aclose()
        (body,) = bodies(server)
        headers = server.requests[0]["headers"]
    assert result.content == (
        ReasoningBlock(text="hmm, two files", provider="groq"),
        TextBlock(text="Looking."),
        ToolCallBlock(id="call_a", name="read_file", arguments={"path": "a" * 60}),
        ToolCallBlock(id="call_b", name="read_file", arguments={"path": "b"}),
    )
    assert "".join(sink.reasonings) == "hmm, two files" and "".join(sink.texts) == "Looking."
    assert result.stop_reason == "tool_use"
    assert result.usage.model_dump() == {
        "input_tokens": 20,
        "output_tokens": 8,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 0,
    }
    assert body["stream_options"] == {"include_usage": True} and body["max_tokens"] == 99
    assert body["reasoning_effort"] == "low" and body["messages"][0] == {"role": "system", "content": "sys"}
    assert (
        headers["authorization"] == f"Bearer {FAKE_KEY}"
        and server.requests[0]["path"] == "/v1/chat/completions"
    )


async def test_history_conversion_validates() -> None:
    img = ImageData(media_type="image/jpeg", data="/9j/")
    history = (
        Message.user_text("read both"),
        Message(
            role="assistant",
            content=(
                TextBlock(text="ok"),
                ToolCallBlock(id="c1", name="read_file", arguments={"path": "a"}),
                ToolCallBlock(id="c2", name="read_file", arguments=None, raw_arguments="{oops"),
            ),
        ),
        Message(
            role="user",
            content=(
                ToolResultBlock(call_id="c1", content="A", images=(img,)),
                ToolResultBlock(call_id="c2", content="bad args", is_error=True),
            ),
        ),
    )
    with FakeProviderServer([turn(text("fine"))]) as server:
        provider = OpenAIChatProvider(endpoint(server, "ollama", "qwen3"))
        result = await provider.turn(request(*history, response_schema={"type": "object"}), RecordingSink())
        (body,) = bodies(server)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "user"]
    assert body["messages"][2]["tool_calls"][1]["function"]["arguments"] == "{oops"
    assert body["messages"][-1]["content"][0]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert body["response_format"]["type"] == "json_schema"
    assert result.stop_reason == "stop" and result.content == (TextBlock(text="fine"),)


async def test_arguments_not_an_object_and_prefix_stability() -> None:
    script = [turn(call("c1", "read_file", None, raw_arguments='["a"]')), turn(text("end"))]
    with FakeProviderServer(script) as server:
        provider = OpenAIChatProvider(endpoint(server, "groq", "m"))
        first = await provider.turn(request(), RecordingSink())
        history = (
            Message.user_text("hi"),
            first.message,
            Message(role="user", content=(ToolResultBlock(call_id="c1", content="err", is_error=True),)),
        )
        await provider.turn(request(*history), RecordingSink())
        bodies(server)
        p1, p2 = (split_last_item(r["raw"], "messages") for r in server.requests)
    (block,) = first.content
    assert block.arguments is None and block.raw_arguments == '["a"]'
    assert p2.startswith(p1) and len(p2) > len(p1)


async def test_kept_messages_encode_as_the_whole_body_every_turn() -> None:
    """Each message's wire form is kept and encoded once; every request is byte for byte the
    encoding of its whole body, and each extends the one before."""
    from mermaid_cli.providers.http import encode

    script = [turn(call(f"c{i}", "read_file", {"path": str(i)})) for i in range(3)] + [turn(text("end"))]
    with FakeProviderServer(script) as server:
        provider = OpenAIChatProvider(endpoint(server, "groq", "m"))
        history = [Message.user_text("hi")]
        for _ in range(4):
            result = await provider.turn(request(*history), RecordingSink())
            calls = result.message.tool_calls
            history += [
                result.message,
                Message(
                    role="user", content=tuple(ToolResultBlock(call_id=c.id, content="ok") for c in calls)
                ),
            ]
        sent = bodies(server)
        raws = [r["raw"] for r in server.requests]
    assert all(raw == encode(body) for body, raw in zip(sent, raws, strict=True))
    prefixes = [split_last_item(raw, "messages") for raw in raws]
    assert all(b.startswith(a) for a, b in zip(prefixes, prefixes[1:], strict=False))


async def test_openrouter_reasoning_shape_and_openai_token_cap() -> None:
    with FakeProviderServer([turn(text("a")), turn(text("b"))]) as server:
        facts = facts_for("openrouter/x/y", {"openrouter/x/y": LLAMA_SETTINGS})
        await OpenAIChatProvider(endpoint(server, "openrouter", "x/y", facts=facts)).turn(
            request(reasoning="high"), RecordingSink()
        )
        # a model the table does not know is sent no reasoning parameter at all
        await OpenAIChatProvider(endpoint(server, "openrouter", "x/y")).turn(
            request(reasoning="high"), RecordingSink()
        )
        router, unknown = (r["body"] for r in server.requests)
    assert router["reasoning"] == {"effort": "high"} and "reasoning_effort" not in router
    assert "reasoning" not in unknown and "reasoning_effort" not in unknown
    real = OpenAIChatProvider(
        Endpoint(provider="openai", model="o3", base_url="https://api.openai.com/v1", api_key="k")
    )
    body = real.build_body(request(max_output_tokens=7))
    validate_chat_request(body)
    assert body["max_completion_tokens"] == 7 and "max_tokens" not in body
