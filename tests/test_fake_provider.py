"""The fake provider server, checked against the official SDKs (the conformance oracle): the SDKs
must parse its streams and errors exactly as they parse the real APIs'."""

from __future__ import annotations

import json
import subprocess
import sys

import anthropic
import httpx
import openai
import pytest
from provider_fixtures import (
    FAKE_KEY,
    ROOT,
    FakeProviderServer,
    call,
    fault,
    strict_validator,
    text,
    turn,
    validate_sdk_event,
)

THINK = {"type": "reasoning", "text": "let me think about it", "signature": "sig-123"}
SCRIPT = [
    turn(
        THINK,
        text("I will read the file now."),
        call("toolu_1", "read_file", {"path": "a.txt"}),
        usage={"input_tokens": 50, "output_tokens": 7, "cache_read_input_tokens": 30},
    ),
    turn(text("All done."), stop_reason="stop"),
]


def _events_of(raw: bytes) -> list[tuple[str | None, str]]:
    out, name = [], None
    for line in raw.decode().splitlines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            out.append((name, line[6:]))
            name = None
    return out


# --- Anthropic ------------------------------------------------------------------------------------


async def test_anthropic_sdk_parses_the_stream() -> None:
    with FakeProviderServer(SCRIPT) as server:
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key=FAKE_KEY, max_retries=0)
        async with client.messages.stream(
            model="claude-sonnet-4-6", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            texts = [t async for t in stream.text_stream]
            message = await stream.get_final_message()
        assert "".join(texts) == "I will read the file now."
        kinds = [b.type for b in message.content]
        assert kinds == ["thinking", "text", "tool_use"]
        assert message.content[0].signature == "sig-123"
        assert message.content[0].thinking == "let me think about it"
        assert message.content[2].input == {"path": "a.txt"} and message.content[2].id == "toolu_1"
        assert message.stop_reason == "tool_use"
        assert message.usage.input_tokens == 50 and message.usage.cache_read_input_tokens == 30
        assert message.usage.output_tokens == 7
        final = await client.messages.create(
            model="claude-sonnet-4-6", max_tokens=100, messages=[{"role": "user", "content": "x"}]
        )
        assert final.content[0].text == "All done." and final.stop_reason == "end_turn"


async def test_anthropic_stream_events_validate_against_sdk_types() -> None:
    from anthropic.types import RawMessageStreamEvent

    with FakeProviderServer(SCRIPT[:1]) as server:
        r = httpx.post(
            server.url + "/v1/messages", json={"model": "m", "max_tokens": 5, "messages": [], "stream": True}
        )
        events = _events_of(r.content)
    assert [n for n, _ in events][:2] == ["message_start", "ping"]
    for name, data in events:
        if name == "ping":
            continue
        obj = validate_sdk_event(RawMessageStreamEvent, json.loads(data))
        assert obj.type == name


@pytest.mark.parametrize(
    ("kind", "exc"),
    [
        ("http_429", anthropic.RateLimitError),
        ("http_500", anthropic.InternalServerError),
        ("auth_401", anthropic.AuthenticationError),
        ("unknown_model_404", anthropic.NotFoundError),
        ("context_too_long", anthropic.BadRequestError),
    ],
)
async def test_anthropic_faults_are_the_sdk_errors(kind: str, exc: type[Exception]) -> None:
    with FakeProviderServer([fault(kind, retry_after=0.25), *SCRIPT]) as server:
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key=FAKE_KEY, max_retries=0)
        with pytest.raises(exc) as info:
            await client.messages.create(
                model="claude-x", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
        if kind == "http_429":
            assert info.value.response.headers["retry-after"] == "0.25"
        # the fault took no turn: the next request gets the first one
        ok = await client.messages.create(
            model="claude-x", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
        assert ok.content[-1].type == "tool_use"


async def test_anthropic_overloaded_is_an_error_event_mid_stream() -> None:
    with FakeProviderServer([fault("overloaded"), *SCRIPT]) as server:
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key=FAKE_KEY, max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as info:
            async with client.messages.stream(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            ) as s:
                await s.get_final_message()
        assert "Overloaded" in str(info.value)


async def test_stream_cut_breaks_the_sdk_stream_and_keeps_the_turn() -> None:
    with FakeProviderServer([fault("stream_cut"), *SCRIPT]) as server:
        client = anthropic.AsyncAnthropic(base_url=server.url, api_key=FAKE_KEY, max_retries=0)
        # the SDK's transport (httpx2) reports the cut body like httpx does
        with pytest.raises(Exception, match="incomplete chunked read"):
            async with client.messages.stream(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            ) as s:
                await s.get_final_message()
        assert server.remaining == 2
        again = await client.messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
        assert again.content[-1].type == "tool_use"


def test_unknown_block_is_sent_verbatim_and_sdk_tolerates_it() -> None:
    odd = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "x"}}
    with FakeProviderServer([turn(odd, text("ok"))]) as server:
        r = httpx.post(
            server.url + "/v1/messages", json={"model": "m", "max_tokens": 5, "messages": [], "stream": True}
        )
    starts = [json.loads(d) for n, d in _events_of(r.content) if n == "content_block_start"]
    assert starts[0]["content_block"] == odd


# --- OpenAI Responses -----------------------------------------------------------------------------


async def test_openai_sdk_parses_the_responses_stream() -> None:
    from openai.types.responses import ResponseStreamEvent

    script = [
        turn(
            {"type": "reasoning", "text": "thinking hard"},
            text("Reading."),
            call("call_1", "read_file", {"path": "a.txt"}),
            usage={"input_tokens": 40, "output_tokens": 9, "cache_read_input_tokens": 60},
        )
    ]
    with FakeProviderServer(script) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=FAKE_KEY, max_retries=0)
        stream = await client.responses.create(model="gpt-5", input="hi", stream=True)
        events = [e async for e in stream]
        body = server.requests[0]
    assert body["headers"]["authorization"] == f"Bearer {FAKE_KEY}"
    for event in events:
        validate_sdk_event(ResponseStreamEvent, event.model_dump(mode="json", exclude_unset=True))
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    final = events[-1].response
    assert final.output_text == "Reading."
    assert [o.type for o in final.output] == ["reasoning", "message", "function_call"]
    assert final.output[0].encrypted_content and final.output[0].summary[0].text == "thinking hard"
    assert json.loads(final.output[2].arguments) == {"path": "a.txt"}
    assert final.usage.input_tokens == 100 and final.usage.input_tokens_details.cached_tokens == 60
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == "Reading."


async def test_openai_sdk_parses_non_streaming_response_and_apply_patch_call() -> None:
    item = {
        "type": "apply_patch_call",
        "call_id": "call_p",
        "operation": {"type": "create_file", "path": "n.txt", "diff": "+hello\n"},
    }
    native = {"provider": "openai", "item": item}
    with FakeProviderServer([turn(call("call_p", "apply_patch", {"patch": "x"}, native=native))]) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=FAKE_KEY, max_retries=0)
        response = await client.responses.create(model="gpt-5", input="hi")
    assert response.output[0].type == "apply_patch_call"
    assert response.output[0].operation.path == "n.txt"


@pytest.mark.parametrize(
    ("kind", "exc"),
    [
        ("http_429", openai.RateLimitError),
        ("http_500", openai.InternalServerError),
        ("overloaded", openai.InternalServerError),
        ("auth_401", openai.AuthenticationError),
        ("unknown_model_404", openai.NotFoundError),
        ("context_too_long", openai.BadRequestError),
    ],
)
async def test_openai_faults_are_the_sdk_errors(kind: str, exc: type[Exception]) -> None:
    with FakeProviderServer([fault(kind), *SCRIPT]) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=FAKE_KEY, max_retries=0)
        with pytest.raises(exc) as info:
            await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
        if kind == "context_too_long":
            assert info.value.code == "context_length_exceeded"


# --- Chat Completions -----------------------------------------------------------------------------


async def test_openai_sdk_parses_the_chat_stream() -> None:
    from openai.types.chat import ChatCompletionChunk

    script = [
        turn(
            text("Let me look."),
            call("call_a", "read_file", {"path": "a.txt"}),
            call("call_b", "list", {"dir": "."}),
            usage={"input_tokens": 11, "output_tokens": 3},
        )
    ]
    with FakeProviderServer(script) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=FAKE_KEY, max_retries=0)
        stream = await client.chat.completions.create(
            model="llama",
            messages=[{"role": "user", "content": "x"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [c async for c in stream]
    for c in chunks:
        ChatCompletionChunk.model_validate(c.model_dump(mode="json"))
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == "Let me look."
    args: dict[int, str] = {}
    for c in chunks:
        for tc in (c.choices[0].delta.tool_calls or []) if c.choices else []:
            args[tc.index] = args.get(tc.index, "") + (tc.function.arguments or "")
    assert {k: json.loads(v) for k, v in args.items()} == {0: {"path": "a.txt"}, 1: {"dir": "."}}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].usage.prompt_tokens == 11 and chunks[-1].usage.completion_tokens == 3


async def test_openai_sdk_parses_non_streaming_chat() -> None:
    with FakeProviderServer([turn(text("hi there"))]) as server:
        client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=FAKE_KEY, max_retries=0)
        completion = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
    assert completion.choices[0].message.content == "hi there"
    assert completion.choices[0].finish_reason == "stop"


# --- the server itself ----------------------------------------------------------------------------


def test_bad_tool_json_breaks_the_arguments_of_the_next_turn() -> None:
    with FakeProviderServer([fault("bad_tool_json"), *SCRIPT]) as server:
        r = httpx.post(server.url + "/v1/chat/completions", json={"model": "m", "messages": []})
    raw = r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    with pytest.raises(ValueError):
        json.loads(raw)


def test_slow_first_byte_still_answers() -> None:
    with FakeProviderServer([fault("slow_first_byte", delay=0.2), turn(text("late"))]) as server:
        r = httpx.post(server.url + "/v1/chat/completions", json={"model": "m", "messages": []})
    assert r.json()["choices"][0]["message"]["content"] == "late"


def test_exhausted_script_is_a_400_and_requests_are_logged(tmp_path) -> None:
    log = tmp_path / "req.jsonl"
    with FakeProviderServer([], log_path=log) as server:
        r = httpx.post(server.url + "/v1/messages", json={"model": "m"}, headers={"x-api-key": FAKE_KEY})
    assert r.status_code == 400 and "no turn left" in r.json()["error"]["message"]
    assert server.requests[0]["body"] == {"model": "m"}
    logged = log.read_text()
    assert FAKE_KEY not in logged and json.loads(logged)["headers"]["x-api-key"] == "***"


def test_runs_as_a_script(tmp_path) -> None:
    script = tmp_path / "s.jsonl"
    script.write_text(
        "\n".join(
            json.dumps(x)
            for x in [{"type": "header", "format": "mermaid-recording"}, turn(text("from a process"))]
        )
    )
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "fixtures" / "fake_provider.py"), str(script), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:")
        url = line.split()[-1]
        r = httpx.post(url + "/v1/chat/completions", json={"model": "m", "messages": []})
        assert r.json()["choices"][0]["message"]["content"] == "from a process"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_strict_validator_rejects_what_the_api_would() -> None:
    from anthropic.types.message_create_params import MessageCreateParamsStreaming

    v = strict_validator(MessageCreateParamsStreaming)
    good = {
        "model": "m",
        "max_tokens": 5,
        "stream": True,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}],
    }
    v.validate_python(good)
    bad = json.loads(json.dumps(good))
    bad["messages"][0]["content"][0]["bogus"] = 1
    with pytest.raises(ValueError, match="bogus"):
        v.validate_python(bad)
    bad2 = json.loads(json.dumps(good))
    bad2["messages"][0]["content"][0]["type"] = "txet"
    with pytest.raises(ValueError, match="txet"):
        v.validate_python(bad2)
