"""Provider-native computer use: Anthropic's computer tool and OpenAI's batched `computer` tool,
offered in place of our schema and rewritten onto our `computer` tool as calls arrive."""

from __future__ import annotations

from mermaid_cli.core.types import ImageData, Message, ToolResultBlock, ToolSpec, TurnRequest
from mermaid_cli.providers import native_tools as nt
from mermaid_cli.providers.anthropic import AnthropicProvider
from mermaid_cli.providers.http import Endpoint
from mermaid_cli.providers.openai_responses import OpenAIResponsesProvider, _turn_from_output
from mermaid_cli.tools.computer.actions import ComputerArgs

COMPUTER = ToolSpec(name="computer", description="d", input_schema={"type": "object"}, display=(1430, 804))
READ = ToolSpec(name="read_file", description="r", input_schema={"type": "object"})


def anthropic(model: str) -> AnthropicProvider:
    return AnthropicProvider(Endpoint(provider="anthropic", model=model, base_url="https://x", api_key="k"))


def test_claude_gets_anthropic_computer_tool_sized_to_the_screenshots_and_the_beta_header():
    provider = anthropic("claude-sonnet-4-5")
    body = provider.build_body(
        TurnRequest(system="s", messages=(Message.user_text("hi"),), tools=(COMPUTER, READ))
    )
    natives = [{k: v for k, v in t.items() if k != "cache_control"} for t in body["tools"] if "type" in t]
    assert natives == [
        {
            "type": "computer_20250124",
            "name": "computer",
            "display_width_px": 1430,
            "display_height_px": 804,
        }
    ]
    assert not any(t.get("name") == "computer" and "input_schema" in t for t in body["tools"])
    assert provider.headers()["anthropic-beta"] == "computer-use-2025-01-24"

    opus = anthropic("claude-opus-4-5")
    body = opus.build_body(TurnRequest(system="s", messages=(), tools=(COMPUTER,)))
    (native,) = [t for t in body["tools"] if "type" in t]
    assert native["type"] == "computer_20251124" and native["enable_zoom"] is True
    assert opus.headers()["anthropic-beta"] == "computer-use-2025-11-24"

    plain = anthropic("claude-sonnet-4-5").build_body(
        TurnRequest(system="s", messages=(), tools=(COMPUTER,)), native=False
    )
    assert [t["name"] for t in plain["tools"]] == ["computer"] and "input_schema" in plain["tools"][0]


def test_claude_calls_already_fit_our_arguments():
    for call in (
        {"action": "left_click", "coordinate": [10, 20], "text": "shift"},
        {"action": "scroll", "coordinate": [5, 5], "scroll_direction": "up", "scroll_amount": 3},
        {"action": "zoom", "region": [0, 0, 100, 80]},
        {"action": "hold_key", "text": "shift", "duration": 1},
    ):
        ComputerArgs.model_validate(call)


def test_openai_gets_its_computer_tool_and_a_call_becomes_one_batch():
    provider = OpenAIResponsesProvider(
        Endpoint(provider="openai", model="gpt-5.4", base_url="https://x", api_key="k")
    )
    body = provider.build_body(TurnRequest(system="s", messages=(), tools=(COMPUTER, READ)))
    assert {"type": "computer"} in body["tools"]
    assert [t["name"] for t in body["tools"] if t.get("type") == "function"] == ["read_file"]

    item = {
        "type": "computer_call",
        "id": "cu_1",
        "call_id": "call_1",
        "actions": [
            {"type": "click", "x": 10, "y": 20, "button": "left"},
            {"type": "type", "text": "hello"},
            {"type": "keypress", "keys": ["CTRL", "S"]},
            {"type": "scroll", "x": 5, "y": 6, "scroll_x": 0, "scroll_y": 300},
            {"type": "drag", "path": [{"x": 1, "y": 2}, {"x": 3, "y": 4}, {"x": 5, "y": 6}]},
            {"type": "screenshot"},
        ],
        "pending_safety_checks": [
            {"id": "sc_1", "code": "malicious_instructions", "message": "Check the page"}
        ],
        "status": "completed",
    }
    turn = _turn_from_output([item], {"status": "completed"})
    (call,) = turn.message.tool_calls
    assert call.name == "computer" and call.id == "call_1"
    assert call.arguments == {
        "action": "screenshot",
        "actions": [
            {"action": "left_click", "coordinate": [10, 20]},
            {"action": "type", "text": "hello"},
            {"action": "key", "text": "CTRL+S"},
            {"action": "scroll", "coordinate": [5, 6], "scroll_direction": "down", "scroll_amount": 3},
            {"action": "left_click_drag", "start_coordinate": [1, 2], "coordinate": [5, 6]},
        ],
        "warnings": ["Check the page"],
    }
    args = ComputerArgs.model_validate(call.arguments)
    assert len(args.actions or []) == 5

    # history: the call goes back as written, answered by a computer_call_output with the screenshot
    shot = ImageData(media_type="image/png", data="QUJD")
    result = ToolResultBlock(call_id="call_1", content="done", images=(shot,))
    history = (Message.user_text("go"), turn.message, Message(role="user", content=(result,)))
    body = provider.build_body(TurnRequest(system="s", messages=history, tools=(COMPUTER,)))
    sent = body["input"]
    back = next(i for i in sent if i.get("type") == "computer_call")
    assert back["call_id"] == "call_1" and back["actions"] == item["actions"]
    output = next(i for i in sent if i.get("type") == "computer_call_output")
    assert output["output"] == {"type": "computer_screenshot", "image_url": "data:image/png;base64,QUJD"}
    assert output["acknowledged_safety_checks"] == item["pending_safety_checks"]
    assert not any(i.get("type") == "function_call_output" for i in sent)


def test_an_openai_call_that_failed_says_why_in_words():
    provider = OpenAIResponsesProvider(
        Endpoint(provider="openai", model="gpt-5.4", base_url="https://x", api_key="k")
    )
    call = nt.rewrite_openai_computer(
        {"type": "computer_call", "call_id": "c", "actions": [{"type": "wait"}]}
    )
    failed = ToolResultBlock(call_id="c", content="Not executed: the user moved the mouse", is_error=True)
    from mermaid_cli.core.types import ModelTurn

    history = (ModelTurn(content=(call,)).message, Message(role="user", content=(failed,)))
    body = provider.build_body(TurnRequest(system="s", messages=history, tools=(COMPUTER,)))
    output = next(i for i in body["input"] if i.get("type") == "computer_call_output")
    assert output["output"]["image_url"].startswith("data:image/png;base64,")
    words = [p["text"] for i in body["input"] if i.get("role") == "user" for p in i["content"]]
    assert any("the user moved the mouse" in w for w in words)


def test_the_older_single_action_form_is_understood():
    call = nt.rewrite_openai_computer(
        {"type": "computer_call", "call_id": "c", "action": {"type": "double_click", "x": 1, "y": 2}}
    )
    assert call.arguments == {
        "action": "screenshot",
        "actions": [{"action": "double_click", "coordinate": [1, 2]}],
    }
