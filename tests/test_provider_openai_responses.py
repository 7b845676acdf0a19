"""The OpenAI Responses client against the fake server; request bodies validated with the SDK's types."""

from __future__ import annotations

from provider_fixtures import (
    FAKE_KEY,
    FakeProviderServer,
    RecordingSink,
    call,
    endpoint,
    text,
    turn,
    validate_responses_request,
)

from mermaid_cli.core.types import (
    ImageBlock,
    ImageData,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSpec,
    TurnRequest,
)
from mermaid_cli.providers.http import split_last_item
from mermaid_cli.providers.openai_responses import OpenAIResponsesProvider


def spec(name: str) -> ToolSpec:
    return ToolSpec(
        name=name, description=f"the {name} tool", input_schema={"type": "object", "properties": {}}
    )


TOOLS = (spec("read_file"), spec("apply_patch"), spec("execute_command"))


def request(*messages: Message, tools: tuple[ToolSpec, ...] = TOOLS, **kw) -> TurnRequest:
    return TurnRequest(system="Be brief.", messages=messages or (Message.user_text("hi"),), tools=tools, **kw)


def bodies(server) -> list[dict]:
    out = [r["body"] for r in server.requests]
    for body in out:
        validate_responses_request(body)
    return out


def provider_for(server, model: str = "gpt-5", **kw) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(endpoint(server, "openai", model, **kw))


async def test_text_function_call_and_usage() -> None:
    script = [
        turn(
            text("Let me check that."),
            call("call_1", "read_file", {"path": "a"}),
            usage={
                "input_tokens": 10,
                "output_tokens": 5,
                "cache_read_input_tokens": 90,
                "cache_creation_input_tokens": 7,
            },
        )
    ]
    with FakeProviderServer(script) as server:
        provider = provider_for(server)
        sink = RecordingSink()
        result = await provider.turn(request(), sink)
        await provider.aclose()
        (body,) = bodies(server)
        headers = server.requests[0]["headers"]
    assert "".join(sink.texts) == "Let me check that."
    assert result.content == (
        TextBlock(text="Let me check that."),
        ToolCallBlock(id="call_1", name="read_file", arguments={"path": "a"}),
    )
    assert result.stop_reason == "tool_use"
    assert result.usage.model_dump() == {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_read_input_tokens": 90,
        "cache_creation_input_tokens": 7,
    }
    assert headers["authorization"] == f"Bearer {FAKE_KEY}"
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["instructions"] == "Be brief." and list(body)[-1] == "input"
    assert "previous_response_id" not in body


async def test_non_reasoning_model_gets_no_include_and_length_stop() -> None:
    with FakeProviderServer([turn(text("cut"), stop_reason="length")]) as server:
        provider = provider_for(server, "gpt-4.1")
        result = await provider.turn(request(max_output_tokens=50), RecordingSink())
        (body,) = bodies(server)
    assert "include" not in body and "reasoning" not in body and body["max_output_tokens"] == 50
    assert result.stop_reason == "length"


async def test_reasoning_items_are_carried_to_the_next_turn() -> None:
    script = [
        turn({"type": "reasoning", "text": "plan: read a"}, call("call_1", "read_file", {"path": "a"})),
        turn(text("done")),
    ]
    with FakeProviderServer(script) as server:
        provider = provider_for(server)
        sink = RecordingSink()
        first = await provider.turn(request(reasoning="high"), sink)
        history = (
            Message.user_text("hi"),
            first.message,
            Message(role="user", content=(ToolResultBlock(call_id="call_1", content="contents"),)),
        )
        second = await provider.turn(request(*history, reasoning="high"), RecordingSink())
        b1, b2 = bodies(server)
    assert "".join(sink.reasonings) == "plan: read a"
    reasoning = first.content[0]
    assert reasoning.text == "plan: read a" and reasoning.item["encrypted_content"]
    assert b1["reasoning"] == {"effort": "high", "summary": "auto"}
    kinds = [i.get("type", "message") for i in b2["input"]]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output"]
    assert b2["input"][1]["encrypted_content"] == reasoning.item["encrypted_content"]
    assert b2["input"][1]["id"] == reasoning.item["id"]
    assert b2["input"][2] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "read_file",
        "arguments": '{"path": "a"}',
    }
    assert b2["input"][3] == {"type": "function_call_output", "call_id": "call_1", "output": "contents"}
    assert second.content == (TextBlock(text="done"),)


async def test_native_apply_patch_offered_rewritten_and_answered() -> None:
    item = {
        "type": "apply_patch_call",
        "call_id": "call_p",
        "status": "completed",
        "operation": {
            "type": "update_file",
            "path": "src/x.py",
            "diff": "@@ def f():\n-    return 1\n+    return 2\n",
        },
    }
    script = [
        turn(call("call_p", "apply_patch", {}, native={"provider": "openai", "item": item})),
        turn(text("patched")),
    ]
    with FakeProviderServer(script) as server:
        provider = provider_for(server)
        first = await provider.turn(request(), RecordingSink())
        results = Message(
            role="user", content=(ToolResultBlock(call_id="call_p", content="Applied patch: 1 file"),)
        )
        await provider.turn(request(Message.user_text("hi"), first.message, results), RecordingSink())
        b1, b2 = bodies(server)
    assert [t.get("name", t["type"]) for t in b1["tools"]] == ["read_file", "execute_command", "apply_patch"]
    assert b1["tools"][-1] == {"type": "apply_patch"}
    (block,) = first.content
    assert block.name == "apply_patch" and block.native["item"]["call_id"] == "call_p"
    assert block.arguments == {
        "patch": "*** Begin Patch\n*** Update File: src/x.py\n@@ def f():\n-    return 1\n+    return 2\n*** End Patch\n"
    }
    assert b2["input"][1]["type"] == "apply_patch_call" and b2["input"][1]["operation"] == item["operation"]
    assert b2["input"][2] == {
        "type": "apply_patch_call_output",
        "call_id": "call_p",
        "status": "completed",
        "output": "Applied patch: 1 file",
    }


async def test_images_and_schema_and_prefix_stability() -> None:
    img = ImageData(media_type="image/png", data="AAAA")
    script = [turn(call("c1", "read_file", {"path": "p.png"})), turn(text('{"ok": true}'))]
    with FakeProviderServer(script) as server:
        provider = provider_for(server, native_tools=False)
        messages = [Message(role="user", content=(TextBlock(text="describe"), ImageBlock(image=img)))]
        first = await provider.turn(request(*messages), RecordingSink())
        messages += [
            first.message,
            Message(
                role="user",
                content=(ToolResultBlock(call_id="c1", content="[image/png, 3 bytes]", images=(img,)),),
            ),
        ]
        await provider.turn(request(*messages, response_schema={"type": "object"}), RecordingSink())
        b1, b2 = bodies(server)
        raws = [r["raw"] for r in server.requests]
    assert b1["input"][0]["content"][1] == {
        "type": "input_image",
        "image_url": "data:image/png;base64,AAAA",
        "detail": "auto",
    }
    assert b2["input"][-1]["content"][0]["type"] == "input_image"
    assert b2["text"]["format"]["type"] == "json_schema"
    assert [t["name"] for t in b1["tools"]] == ["read_file", "apply_patch", "execute_command"]
    # The schema turn adds `text` before `input`; everything before it stays identical.
    assert raws[1][: raws[1].index(b'"tools"')] == raws[0][: raws[0].index(b'"tools"')]


async def test_prefix_is_byte_stable_across_turns() -> None:
    script = [
        turn(call("a", "read_file", {"path": "1"})),
        turn(call("b", "read_file", {"path": "2"})),
        turn(text("end")),
    ]
    with FakeProviderServer(script) as server:
        provider = provider_for(server)
        messages = [Message.user_text("go")]
        for _ in range(3):
            result = await provider.turn(request(*messages), RecordingSink())
            messages += [
                result.message,
                Message(
                    role="user",
                    content=tuple(
                        ToolResultBlock(call_id=c.id, content="r") for c in result.message.tool_calls
                    ),
                ),
            ]
        bodies(server)
        prefixes = [split_last_item(r["raw"], "input") for r in server.requests]
    for earlier, later in zip(prefixes, prefixes[1:], strict=False):
        assert later.startswith(earlier) and len(later) > len(earlier)


async def test_automatic_prompt_cache_hits_after_the_first_turn() -> None:
    script = [turn(call("a", "read_file", {"path": "1"})), turn(text("end"))]
    with FakeProviderServer(script) as server:
        provider = provider_for(server)
        system = "Rules of the house. " * 400
        first = await provider.turn(
            TurnRequest(system=system, messages=(Message.user_text("go"),), tools=TOOLS), RecordingSink()
        )
        history = (
            Message.user_text("go"),
            first.message,
            Message(role="user", content=(ToolResultBlock(call_id="a", content="r"),)),
        )
        second = await provider.turn(
            TurnRequest(system=system, messages=history, tools=TOOLS), RecordingSink()
        )
    assert first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens >= 1024 and second.usage.cache_read_input_tokens % 128 == 0


async def test_reasoning_levels_per_model_family() -> None:
    cases = [
        ("gpt-5", "none", {"effort": "minimal"}),
        ("gpt-5.1", "none", {"effort": "none"}),
        ("gpt-5-mini-2025-08-07", "none", {"effort": "minimal"}),
        ("o3", "low", {"effort": "low", "summary": "auto"}),
        ("gpt-4.1", "high", None),
        ("o4-mini", "none", None),
    ]
    with FakeProviderServer([turn(text("ok")) for _ in cases]) as server:
        for model, level, _ in cases:
            await provider_for(server, model).turn(request(reasoning=level), RecordingSink())
        sent = bodies(server)
    for (model, _, expected), body in zip(cases, sent, strict=True):
        assert body.get("reasoning") == expected, model
