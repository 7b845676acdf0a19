"""Every fault the fake server injects, through each client: retried, or a clear final error."""

from __future__ import annotations

import socket
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provider_fixtures import FAKE_KEY, FakeProviderServer, RecordingSink, call, endpoint, fault, text, turn

from mermaid_cli.core.errors import ContextTooLong, ProviderError
from mermaid_cli.core.types import Message, TextBlock, ToolCallBlock, TurnRequest
from mermaid_cli.providers.anthropic import AnthropicProvider
from mermaid_cli.providers.http import Endpoint, backoff_delay, iter_sse
from mermaid_cli.providers.openai_chat import OpenAIChatProvider
from mermaid_cli.providers.openai_responses import OpenAIResponsesProvider

KINDS = {"anthropic": AnthropicProvider, "openai": OpenAIResponsesProvider, "groq": OpenAIChatProvider}
REQUEST = TurnRequest(system="s", messages=(Message.user_text("hi"),))
ANSWER = turn(
    text("The answer is forty-two, as everyone knows by now."), call("c1", "read_file", {"path": "a.txt"})
)


def make(server, provider: str, **kw):
    return KINDS[provider](endpoint(server, provider, "m", **kw))


def expected_answer() -> tuple:
    return (
        TextBlock(text="The answer is forty-two, as everyone knows by now."),
        ToolCallBlock(id="c1", name="read_file", arguments={"path": "a.txt"}),
    )


@pytest.mark.parametrize("provider", list(KINDS))
@pytest.mark.parametrize("kind", ["http_429", "http_500", "overloaded", "stream_cut"])
async def test_retryable_faults_are_retried_and_the_turn_is_clean(provider: str, kind: str) -> None:
    with FakeProviderServer([fault(kind, retry_after=0.01), ANSWER]) as server:
        p = make(server, provider)
        sink = RecordingSink()
        result = await p.turn(REQUEST, sink)
        await p.aclose()
        assert len(server.requests) == 2
    assert result.content == expected_answer()
    assert len(sink.retries) == 1
    message, code = sink.retries[0]
    assert code and "retrying" in message and FAKE_KEY not in message


@pytest.mark.parametrize("provider", list(KINDS))
async def test_slow_first_byte_is_waited_for(provider: str) -> None:
    with FakeProviderServer([fault("slow_first_byte", delay=0.3), ANSWER]) as server:
        p = make(server, provider)
        sink = RecordingSink()
        result = await p.turn(REQUEST, sink)
    assert result.content == expected_answer() and sink.retries == []


@pytest.mark.parametrize("provider", list(KINDS))
async def test_bad_tool_json_is_kept_raw(provider: str) -> None:
    with FakeProviderServer([fault("bad_tool_json"), ANSWER]) as server:
        result = await make(server, provider).turn(REQUEST, RecordingSink())
    block = result.content[-1]
    assert (
        isinstance(block, ToolCallBlock) and block.arguments is None and block.raw_arguments.startswith("{")
    )


@pytest.mark.parametrize("provider", list(KINDS))
@pytest.mark.parametrize(
    ("kind", "code", "status"), [("auth_401", "auth", 401), ("unknown_model_404", "unknown_model", 404)]
)
async def test_final_errors_end_the_turn_with_the_provider_message(
    provider: str, kind: str, code: str, status: int
) -> None:
    with FakeProviderServer([fault(kind), ANSWER]) as server:
        p = make(server, provider)
        sink = RecordingSink()
        with pytest.raises(ProviderError) as info:
            await p.turn(REQUEST, sink)
        assert len(server.requests) == 1
    err = info.value
    assert err.exit_code == 5 and err.code == code and err.status_code == status and not err.retryable
    assert f"HTTP {status}" in err.message and provider in err.message
    assert ("invalid x-api-key" in err.message) if kind == "auth_401" else ("does not exist" in err.message)
    assert FAKE_KEY not in str(err) and sink.retries == []


@pytest.mark.parametrize("provider", list(KINDS))
async def test_context_too_long(provider: str) -> None:
    with FakeProviderServer([fault("context_too_long")]) as server:
        with pytest.raises(ContextTooLong) as info:
            await make(server, provider).turn(REQUEST, RecordingSink())
    assert info.value.exit_code == 5 and "too long" in info.value.message


async def test_retry_after_is_honoured() -> None:
    with FakeProviderServer([fault("http_429", retry_after=0.4), ANSWER]) as server:
        p = make(server, "anthropic")
        start = time.monotonic()
        await p.turn(REQUEST, RecordingSink())
        assert time.monotonic() - start >= 0.4
    assert backoff_delay(0, 3.0) >= 3.0
    assert all(0 <= backoff_delay(n, None) <= 30 for n in range(10))


async def test_deadline_bounds_retrying() -> None:
    with FakeProviderServer([fault("http_429", retry_after=30), ANSWER]) as server:
        p = make(server, "anthropic", deadline=time.monotonic() + 2)
        with pytest.raises(ProviderError) as info:
            await p.turn(REQUEST, RecordingSink())
    assert "deadline" in info.value.message and info.value.exit_code == 5


async def test_retries_give_up_after_max_attempts() -> None:
    faults = [fault("http_429", retry_after=0.01) for _ in range(6)]
    with FakeProviderServer([*faults, ANSWER]) as server:
        p = make(server, "groq")
        sink = RecordingSink()
        with pytest.raises(ProviderError) as info:
            await p.turn(REQUEST, sink)
        assert len(server.requests) == 6
    assert "gave up after 6 attempts" in info.value.message and len(sink.retries) == 5


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("provider", list(KINDS))
async def test_connection_refused_names_the_url(provider: str) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    p = KINDS[provider](Endpoint(provider=provider, model="m", base_url=url, api_key=FAKE_KEY))
    sink = RecordingSink()
    with pytest.raises(ProviderError) as info:
        await p.turn(REQUEST, sink)
    assert url in info.value.message and info.value.exit_code == 5 and sink.retries == []
    assert FAKE_KEY not in info.value.message


async def test_sse_parser_handles_comments_multiline_and_crlf() -> None:
    async def lines():
        for line in [
            ": keep-alive",
            "event: a",
            'data: {"x":',
            "data: 1}",
            "",
            "data: two\r",
            "\r",
            "event: cut",
            "data: half",
        ]:
            yield line

    events = [e async for e in iter_sse(lines())]
    assert [(e.event, e.data) for e in events] == [("a", '{"x":\n1}'), (None, "two")]


def test_endpoint_repr_hides_the_key() -> None:
    ep = Endpoint(provider="anthropic", model="m", base_url="https://x", api_key=FAKE_KEY)
    assert FAKE_KEY not in repr(ep) and FAKE_KEY not in str(ep)


@pytest.mark.parametrize("provider", list(KINDS))
async def test_in_stream_failure_is_retried(provider: str) -> None:
    # `overloaded` on a streaming request fails after the 200: an error event / response.failed /
    # an error chunk, depending on the protocol.
    with FakeProviderServer([fault("overloaded"), ANSWER]) as server:
        sink = RecordingSink()
        result = await make(server, provider).turn(REQUEST, sink)
        first_status = server.requests[0]["body"]["stream"]
    assert first_status is True and result.content == expected_answer() and len(sink.retries) == 1


async def test_a_bad_request_is_final_and_carries_the_provider_message() -> None:
    with FakeProviderServer([]) as server:  # an empty script answers 400 invalid_request_error
        sink = RecordingSink()
        with pytest.raises(ProviderError) as info:
            await make(server, "anthropic").turn(REQUEST, sink)
        assert len(server.requests) == 1
    assert info.value.status_code == 400 and "no turn left" in info.value.message and sink.retries == []
    assert not isinstance(info.value, ContextTooLong)


@pytest.mark.parametrize("provider", list(KINDS))
async def test_malformed_stream_events_are_provider_errors(provider: str) -> None:
    with FakeProviderServer([fault("malformed"), ANSWER]) as server:
        with pytest.raises(ProviderError) as info:
            await make(server, provider).turn(REQUEST, RecordingSink())
        assert len(server.requests) == 1
    assert info.value.code == "bad_response" and info.value.exit_code == 5
    assert "malformed response" in info.value.message


def test_error_mapping_honours_x_should_retry_and_bodies() -> None:
    from mermaid_cli.providers.http import Retryable, map_http_error

    body = '{"type":"error","error":{"type":"api_error","message":"boom"}}'
    assert isinstance(map_http_error("anthropic", 500, body, {}), Retryable)
    assert not isinstance(map_http_error("anthropic", 500, body, {"x-should-retry": "false"}), Retryable)
    assert isinstance(
        map_http_error("openai", 400, '{"error":{"message":"later"}}', {"x-should-retry": "true"}), Retryable
    )
    err = map_http_error(
        "groq",
        400,
        '{"error":{"message":"This model\'s maximum context length is 8192 tokens","code":"context_length_exceeded"}}',
    )
    assert isinstance(err, ContextTooLong)
    plain = map_http_error("groq", 502, "<html>Bad Gateway</html>", {"retry-after-ms": "1500"})
    assert isinstance(plain, Retryable) and plain.retry_after == 1.5 and "Bad Gateway" in plain.message


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([None, "message_start", "ping"]),
            st.text(
                alphabet=st.characters(
                    blacklist_categories=("Cs",),
                    blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
                )
            ).map(lambda t: t.strip() or "x"),
        ),
        max_size=8,
    )
)
async def test_sse_round_trip(events) -> None:
    lines: list[str] = []
    for name, data in events:
        if name:
            lines.append(f"event: {name}")
        lines.extend(f"data: {part}" for part in data.split("\n"))
        lines.append("")

    async def gen():
        for line in lines:
            yield line

    parsed = [(e.event, e.data) async for e in iter_sse(gen())]
    assert parsed == list(events)


@pytest.mark.parametrize("value", ["nan", "inf", "-5", "1e999"])
def test_a_retry_after_no_server_means_falls_back_to_our_backoff(value):
    """`Retry-After: nan` slept until the run's deadline (20 minutes by default); `-5`, not at all."""
    from mermaid_cli.providers.errors import map_http_error

    error = map_http_error("anthropic", 429, '{"error":{"message":"slow down"}}', {"retry-after": value})
    assert error.retryable and error.retry_after is None


def test_a_huge_error_message_is_cut():
    from mermaid_cli.providers.errors import MAX_ERROR_MESSAGE, map_http_error

    body = '{"error":{"type":"invalid_request_error","message":"' + "x" * 5_000_000 + '"}}'
    error = map_http_error("anthropic", 400, body)
    assert len(str(error)) < MAX_ERROR_MESSAGE + 200 and "more characters" in str(error)
