"""The Anthropic client against the fake server; every request body validated with the SDK's types."""

from __future__ import annotations

import pytest
from provider_fixtures import (
    FAKE_KEY,
    FakeProviderServer,
    RecordingSink,
    call,
    endpoint,
    fault,
    text,
    turn,
    validate_anthropic_request,
)

from mermaid_cli.core.types import (
    ImageData,
    Message,
    ModelTurn,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSpec,
    TurnRequest,
)
from mermaid_cli.providers.anthropic import AnthropicProvider
from mermaid_cli.providers.http import split_last_item


def spec(name: str) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=f"the {name} tool",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
    )


OUR_TOOLS = tuple(spec(n) for n in ("read_file", "write_file", "edit_file", "execute_command", "web_fetch"))


def request(*messages: Message, tools: tuple[ToolSpec, ...] = (spec("read_file"),), **kw) -> TurnRequest:
    return TurnRequest(
        system="You are a test.", messages=messages or (Message.user_text("hi"),), tools=tools, **kw
    )


def bodies(server) -> list[dict]:
    out = [r["body"] for r in server.requests]
    for body in out:
        validate_anthropic_request(body)
    return out


async def test_text_and_tool_call_streamed_with_usage() -> None:
    script = [
        turn(
            text("Reading the file for you now."),
            call("toolu_1", "read_file", {"path": "a.txt"}),
            usage={
                "input_tokens": 12,
                "output_tokens": 34,
                "cache_read_input_tokens": 1000,
                "cache_creation_input_tokens": 50,
            },
        )
    ]
    with FakeProviderServer(script) as server:
        provider = AnthropicProvider(endpoint(server, model="claude-haiku-4-5"))
        sink = RecordingSink()
        result = await provider.turn(request(), sink)
        await provider.aclose()
        (body,) = bodies(server)
        headers = server.requests[0]["headers"]
    assert len(sink.texts) > 1 and "".join(sink.texts) == "Reading the file for you now."
    assert result.content == (
        TextBlock(text="Reading the file for you now."),
        ToolCallBlock(id="toolu_1", name="read_file", arguments={"path": "a.txt"}),
    )
    assert result.stop_reason == "tool_use"
    assert result.usage.model_dump() == {
        "input_tokens": 12,
        "output_tokens": 34,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 50,
    }
    assert headers["x-api-key"] == FAKE_KEY and headers["anthropic-version"] == "2023-06-01"
    assert body["stream"] is True and body["model"] == "claude-haiku-4-5"
    assert list(body)[-1] == "messages"


async def test_cache_breakpoints_on_last_tool_and_last_message() -> None:
    with FakeProviderServer([turn(text("a")), turn(text("b"))]) as server:
        provider = AnthropicProvider(endpoint(server))
        await provider.turn(request(tools=(spec("read_file"), spec("web_fetch"))), RecordingSink())
        await provider.turn(request(tools=()), RecordingSink())
        with_tools, without = bodies(server)
    assert "cache_control" not in with_tools["tools"][0]
    assert with_tools["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in with_tools["system"][0]
    assert with_tools["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert without["system"][-1]["cache_control"] == {"type": "ephemeral"} and "tools" not in without


async def test_request_prefix_is_byte_stable_across_turns() -> None:
    script = [
        turn(call("t1", "read_file", {"path": "a"})),
        turn(call("t2", "read_file", {"path": "b"})),
        turn(text("done")),
    ]
    with FakeProviderServer(script) as server:
        provider = AnthropicProvider(endpoint(server))
        messages = [Message.user_text("task")]
        for _ in range(3):
            result = await provider.turn(request(*messages, tools=OUR_TOOLS), RecordingSink())
            messages.append(result.message)
            messages.append(
                Message(
                    role="user",
                    content=tuple(
                        ToolResultBlock(call_id=c.id, content="ok") for c in result.message.tool_calls
                    ),
                )
            )
        raws = [r["raw"] for r in server.requests]
        bodies(server)
    prefixes = [split_last_item(raw, "messages") for raw in raws]
    for earlier, later in zip(prefixes, prefixes[1:], strict=False):
        assert later.startswith(earlier)
        assert len(later) > len(earlier)


async def test_kept_messages_carry_one_breakpoint_and_encode_as_the_whole_body() -> None:
    """The wire form of each message is kept between turns and encoded once; the cache breakpoint
    is on a copy, so only the last message of each request carries it, and the bytes are exactly
    the whole body's own encoding."""
    from mermaid_cli.providers.http import encode

    script = [turn(call(f"t{i}", "read_file", {"path": str(i)})) for i in range(3)] + [turn(text("done"))]
    with FakeProviderServer(script) as server:
        provider = AnthropicProvider(endpoint(server))
        messages = [Message.user_text("task")]
        for _ in range(4):
            result = await provider.turn(request(*messages, tools=OUR_TOOLS), RecordingSink())
            messages += [
                result.message,
                Message(role="user", content=(ToolResultBlock(call_id="x", content="ok"),)),
            ]
        sent = bodies(server)
        raws = [r["raw"] for r in server.requests]
    for body, raw in zip(sent, raws, strict=True):
        marked = [m for m in body["messages"] if any("cache_control" in b for b in m["content"])]
        assert marked == [body["messages"][-1]]
        assert raw == encode(body)


async def test_thinking_budget_and_reasoning_round_trip() -> None:
    thinking = {"type": "reasoning", "text": "step by step", "signature": "sig-abc"}
    redacted = {"type": "reasoning", "redacted": "opaque-data"}
    script = [turn(thinking, redacted, call("toolu_9", "read_file", {"path": "x"})), turn(text("ok"))]
    with FakeProviderServer(script) as server:
        provider = AnthropicProvider(endpoint(server, model="claude-sonnet-4-5"))
        sink = RecordingSink()
        first = await provider.turn(request(reasoning="medium"), sink)
        history = (
            Message.user_text("hi"),
            first.message,
            Message(role="user", content=(ToolResultBlock(call_id="toolu_9", content="x"),)),
        )
        await provider.turn(request(*history, reasoning="medium"), RecordingSink())
        b1, b2 = bodies(server)
    assert "".join(sink.reasonings) == "step by step"
    assert first.content[0] == ReasoningBlock(text="step by step", signature="sig-abc", provider="anthropic")
    assert first.content[1] == ReasoningBlock(redacted="opaque-data", provider="anthropic")
    assert b1["thinking"] == {"type": "enabled", "budget_tokens": 8192} and b1["max_tokens"] > 8192
    sent = b2["messages"][1]["content"]
    assert sent[0] == {"type": "thinking", "thinking": "step by step", "signature": "sig-abc"}
    assert sent[1] == {"type": "redacted_thinking", "data": "opaque-data"}
    assert sent[2] == {"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {"path": "x"}}


async def test_adaptive_thinking_on_newer_models_and_foreign_reasoning_dropped() -> None:
    with FakeProviderServer([turn(text("ok")), turn(text("ok"))]) as server:
        provider = AnthropicProvider(endpoint(server, model="claude-opus-4-6"))
        foreign = Message(
            role="assistant",
            content=(
                ReasoningBlock(text="from gpt", provider="openai", item={"type": "reasoning"}),
                TextBlock(text="hello"),
            ),
        )
        await provider.turn(
            request(Message.user_text("a"), foreign, Message.user_text("b"), reasoning="high"),
            RecordingSink(),
        )
        await provider.turn(request(reasoning="none"), RecordingSink())
        b1, b2 = bodies(server)
    assert b1["thinking"] == {"type": "adaptive"} and b1["output_config"] == {"effort": "high"}
    assert b1["messages"][1]["content"] == [{"type": "text", "text": "hello"}]
    assert b2["thinking"] == {"type": "disabled"}


async def test_unknown_content_block_is_ignored() -> None:
    odd = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "x"}}
    odd2 = {"type": "brand_new_block", "payload": [1, 2, 3]}
    with FakeProviderServer([turn(odd, text("answer"), odd2)]) as server:
        provider = AnthropicProvider(endpoint(server))
        result = await provider.turn(request(), RecordingSink())
    assert result.content == (TextBlock(text="answer"),)


@pytest.mark.parametrize("raw", ['{"path": "a.txt", "con', "[1, 2]", '"just a string"', "42"])
async def test_tool_arguments_that_are_not_an_object(raw: str) -> None:
    script = [turn(call("toolu_x", "write_file", None, raw_arguments=raw))]
    with FakeProviderServer(script) as server:
        provider = AnthropicProvider(endpoint(server))
        result = await provider.turn(request(), RecordingSink())
    (block,) = result.content
    assert block.arguments is None and block.raw_arguments == raw and block.name == "write_file"


async def test_bad_tool_json_fault_gives_raw_arguments() -> None:
    with FakeProviderServer(
        [fault("bad_tool_json"), turn(call("t", "read_file", {"path": "some/long/path.txt"}))]
    ) as server:
        provider = AnthropicProvider(endpoint(server))
        result = await provider.turn(request(), RecordingSink())
    (block,) = result.content
    assert block.arguments is None and block.raw_arguments.startswith('{"path"')


async def test_history_with_images_errors_and_invalid_args_validates() -> None:
    img = ImageData(media_type="image/png", data="iVBORw0KGgo=")
    history = (
        Message.user_text("look"),
        Message(
            role="assistant",
            content=(ToolCallBlock(id="t1", name="read_file", arguments=None, raw_arguments="{bad"),),
        ),
        Message(
            role="user", content=(ToolResultBlock(call_id="t1", content="", is_error=True, images=(img,)),)
        ),
    )
    with FakeProviderServer([turn(text("ok"))]) as server:
        provider = AnthropicProvider(endpoint(server))
        await provider.turn(request(*history, response_schema={"type": "object"}), RecordingSink())
        (body,) = bodies(server)
    assert body["messages"][1]["content"][0]["input"] == {}
    result = body["messages"][2]["content"][0]
    assert result["is_error"] is True and result["content"][1]["type"] == "image"
    # the schema goes through the API's parameter; the sent history is not edited for it
    assert body["output_config"]["format"] == {"type": "json_schema", "schema": {"type": "object"}}
    assert body["messages"][2]["content"] == [{**result, "cache_control": {"type": "ephemeral"}}]


# --- provider-native tools ------------------------------------------------------------------------


async def test_native_tools_offered_and_calls_rewritten() -> None:
    view = {
        "provider": "anthropic",
        "name": "str_replace_based_edit_tool",
        "input": {"command": "view", "path": "src/a.py", "view_range": [10, 20]},
    }
    bash = {"provider": "anthropic", "name": "bash", "input": {"command": "ls -la"}}
    script = [turn(call("t1", "x", native=view), call("t2", "x", native=bash)), turn(text("done"))]
    with FakeProviderServer(script) as server:
        provider = AnthropicProvider(endpoint(server))
        first = await provider.turn(request(tools=OUR_TOOLS), RecordingSink())
        results = Message(
            role="user",
            content=(
                ToolResultBlock(call_id="t1", content="1\tx"),
                ToolResultBlock(call_id="t2", content="a b"),
            ),
        )
        await provider.turn(
            request(Message.user_text("hi"), first.message, results, tools=OUR_TOOLS), RecordingSink()
        )
        b1, b2 = bodies(server)
    names = [t["name"] for t in b1["tools"]]
    assert names == ["execute_command", "web_fetch", "str_replace_based_edit_tool", "bash"]
    assert b1["tools"][2]["type"] == "text_editor_20250728" and b1["tools"][3]["type"] == "bash_20250124"
    c1, c2 = first.content
    assert (c1.name, c1.arguments) == ("read_file", {"path": "src/a.py", "offset": 10, "limit": 11})
    assert c1.native == view
    assert (c2.name, c2.arguments) == ("execute_command", {"command": "ls -la", "timeout": 600})
    sent = b2["messages"][1]["content"]
    assert sent[0] == {
        "type": "tool_use",
        "id": "t1",
        "name": "str_replace_based_edit_tool",
        "input": view["input"],
    }
    assert sent[1] == {"type": "tool_use", "id": "t2", "name": "bash", "input": {"command": "ls -la"}}


async def test_native_tools_off_sends_our_schemas() -> None:
    with FakeProviderServer([turn(text("ok"))]) as server:
        provider = AnthropicProvider(endpoint(server, native_tools=False))
        await provider.turn(request(tools=OUR_TOOLS), RecordingSink())
        (body,) = bodies(server)
    assert [t["name"] for t in body["tools"]] == [t.name for t in OUR_TOOLS]


async def test_rejected_native_tools_fall_back_and_are_remembered() -> None:
    with FakeProviderServer([fault("reject_native_tools"), turn(text("one")), turn(text("two"))]) as server:
        provider = AnthropicProvider(endpoint(server))
        sink = RecordingSink()
        first = await provider.turn(request(tools=OUR_TOOLS), sink)
        await provider.turn(request(tools=OUR_TOOLS), RecordingSink())
        b_rejected, b_fallback, b_later = bodies(server)
    assert first.content == (TextBlock(text="one"),)
    assert any(t.get("type") == "text_editor_20250728" for t in b_rejected["tools"])
    for body in (b_fallback, b_later):
        assert [t["name"] for t in body["tools"]] == [t.name for t in OUR_TOOLS]
    assert [code for _, code in sink.retries] == ["native_tools_rejected"]
    assert provider.native_rejected


def test_turn_round_trips_through_the_recording_format() -> None:
    native = {"provider": "anthropic", "name": "bash", "input": {"command": "ls"}}
    turn_ = ModelTurn(
        content=(
            ReasoningBlock(text="t", signature="s", provider="anthropic"),
            ToolCallBlock(
                id="a", name="execute_command", arguments={"command": "ls", "timeout": 600}, native=native
            ),
        )
    )
    assert ModelTurn.model_validate_json(turn_.model_dump_json()) == turn_


async def test_every_turn_after_the_first_reads_the_prompt_cache() -> None:
    # No usage in the script: the fake server reports what Anthropic's cache would (>= 1024 tokens).
    script = [
        turn(call("t1", "read_file", {"path": "a"})),
        turn(call("t2", "read_file", {"path": "b"})),
        turn(text("done")),
    ]
    big_system = "You are a careful engineer. " * 400
    with FakeProviderServer(script) as server:
        provider = AnthropicProvider(endpoint(server))
        messages = [Message.user_text("task")]
        usages = []
        for _ in range(3):
            req = TurnRequest(system=big_system, messages=tuple(messages), tools=OUR_TOOLS)
            result = await provider.turn(req, RecordingSink())
            usages.append(result.usage)
            messages.append(result.message)
            messages.append(
                Message(
                    role="user",
                    content=tuple(
                        ToolResultBlock(call_id=c.id, content="file text " * 50)
                        for c in result.message.tool_calls
                    ),
                )
            )
    assert usages[0].cache_read_input_tokens == 0 and usages[0].cache_creation_input_tokens > 2000
    for before, after in zip(usages, usages[1:], strict=False):
        written_before = before.cache_read_input_tokens + before.cache_creation_input_tokens
        assert after.cache_read_input_tokens == written_before  # the whole previous prompt is a hit
        assert after.cache_creation_input_tokens > 0 and after.input_tokens < 50
