"""OpenAI Chat Completions over httpx, streaming SSE, for OpenAI-compatible servers (Groq, xAI,
Gemini's compatible endpoint, OpenRouter, NVIDIA, Ollama, vLLM, LM Studio...).

`tool_calls` deltas are accumulated by `index`; usage arrives in a last chunk with no choices
(`stream_options.include_usage`). `messages` is the last key of the body so the prefix is stable.
"""

from __future__ import annotations

import json
from typing import Any

from mermaid_cli.core.kept import KeptForms
from mermaid_cli.core.types import (
    Block,
    ImageBlock,
    Message,
    ModelTurn,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    TurnRequest,
    Usage,
)
from mermaid_cli.providers.base import TurnSink
from mermaid_cli.providers.errors import StreamCut, map_stream_error
from mermaid_cli.providers.fallbacks import Fallbacks, with_fallbacks
from mermaid_cli.providers.http import (
    BodyEncoder,
    Endpoint,
    HttpTransport,
    with_retries,
)
from mermaid_cli.providers.openai_responses import data_url, parse_arguments

_FINISH = {
    "stop": "stop",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "length",
    "content_filter": "content_filter",
}


class OpenAIChatProvider:
    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.model_id = endpoint.model_id
        self._http = HttpTransport(
            endpoint.provider,
            secrets=endpoint.secrets,
            connect_timeout=endpoint.connect_timeout,
            base_url=endpoint.base_url,
        )
        #: what this run's requests leave out since the server refused it (see fallbacks.py)
        self.fallbacks = Fallbacks()
        #: each message's wire messages, encoded once
        self._wire: KeptForms[Message, list[dict[str, Any]]] = KeptForms()
        self._encoder = BodyEncoder("messages")

    @property
    def url(self) -> str:
        return self.endpoint.base_url.rstrip("/") + "/chat/completions"

    def headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if self.endpoint.api_key:
            headers["authorization"] = f"Bearer {self.endpoint.api_key}"
        headers.update(dict(self.endpoint.extra_headers))
        return headers

    def build_body(self, request: TurnRequest) -> dict[str, Any]:
        done = self.fallbacks
        body: dict[str, Any] = {"model": self.endpoint.model, "stream": not done.stream}
        if not done.stream:
            body["stream_options"] = {"include_usage": True}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
                }
                for t in request.tools
            ]
            if request.response_schema is not None:
                # The format turn keeps the same tools (append-only, cache) but may not call them.
                body["tool_choice"] = "none"
        facts = self.endpoint.model_facts
        openai_itself = "api.openai.com" in self.endpoint.base_url
        if request.max_output_tokens:
            # OpenAI's reasoning models want max_completion_tokens; compatible servers know max_tokens.
            cap = facts.output_cap(request.max_output_tokens, request.max_output_tokens)
            body["max_completion_tokens" if openai_itself else "max_tokens"] = cap
        effort = facts.effort(request.reasoning) if facts.thinking.mode == "effort" else None
        if effort is not None:
            if self.endpoint.provider == "openrouter":
                body["reasoning"] = {"effort": effort}  # OpenRouter's unified shape
            else:
                body["reasoning_effort"] = effort
        if request.response_schema is not None and not done.output_format:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": request.response_schema},
            }
        messages: list[dict[str, Any]] = (
            [{"role": "system", "content": request.system}] if request.system else []
        )
        for forms in self._wire.forms(request.messages, None, _messages):
            messages.extend(forms)
        body["messages"] = messages
        return body

    async def turn(self, request: TurnRequest, sink: TurnSink) -> ModelTurn:
        return await with_fallbacks(
            self.endpoint.provider, self.fallbacks, lambda: self.build_body(request), self._send, sink
        )

    async def _send(self, body: dict[str, Any], sink: TurnSink) -> ModelTurn:
        raw = self._encoder.encode(body)
        attempt = self._attempt if body.get("stream") else self._attempt_whole
        return await with_retries(
            lambda: attempt(raw, sink), sink, deadline=self.endpoint.deadline, secrets=self.endpoint.secrets
        )

    async def _attempt_whole(self, body: bytes, sink: TurnSink) -> ModelTurn:
        """One request sent without streaming: each choice's message is read as one big delta."""
        completion = await self._http.post_json(self.url, self.headers(), body)
        if not isinstance(completion, dict):
            raise ValueError("the response is not a JSON object")
        choices = []
        for choice in completion.get("choices") or []:
            message = dict(choice.get("message") or {})
            calls = message.get("tool_calls") or []
            message["tool_calls"] = [{"index": i, **c} for i, c in enumerate(calls)]
            choices.append({**choice, "delta": message})
        state = _ChatStream(self.endpoint.provider)
        state.feed({**completion, "choices": choices}, sink)
        return state.result()

    async def _attempt(self, body: bytes, sink: TurnSink) -> ModelTurn:
        state = _ChatStream(self.endpoint.provider)
        async for event in self._http.stream_events(self.url, self.headers(), body):
            if state.done or event.data.strip() == "[DONE]":
                state.done = True  # read to the end so the connection is reused
                continue
            chunk = event.json()
            if isinstance(chunk, dict):
                state.feed(chunk, sink)
        if not state.done and state.finish is None:
            raise StreamCut()
        return state.result()

    async def aclose(self) -> None:
        await self._http.aclose()


class _ChatStream:
    """Accumulates one streamed chat completion: text, reasoning, tool calls by index, usage."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.finish: str | None = None
        self.usage: dict[str, Any] = {}
        self.model: str | None = None
        self.done = False

    def feed(self, chunk: dict[str, Any], sink: TurnSink) -> None:
        if "error" in chunk:
            raise map_stream_error(self.provider, chunk)
        self.model = chunk.get("model") or self.model
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            self._delta(choice.get("delta") or {}, sink)
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]

    def _delta(self, delta: dict[str, Any], sink: TurnSink) -> None:
        if delta.get("content"):
            self.text.append(delta["content"])
            sink.text(delta["content"])
        thought = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(thought, str) and thought:
            self.reasoning.append(thought)
            sink.reasoning(thought)
        for tc in delta.get("tool_calls") or []:
            slot = self.calls.setdefault(
                int(tc.get("index", len(self.calls))),
                {"id": "", "name": "", "arguments": "", "signature": ""},
            )
            if tc.get("id"):
                slot["id"] = tc["id"]
            fn = tc.get("function") or {}
            name = fn.get("name")
            # Some servers repeat the whole name in every chunk; others send it once (or in pieces).
            if name and name != slot["name"]:
                slot["name"] += name
            if fn.get("arguments"):
                slot["arguments"] += fn["arguments"]
            # Gemini 3 signs its calls; the call is refused on the next turn without its signature.
            google = (tc.get("extra_content") or {}).get("google") or {}
            if isinstance(google.get("thought_signature"), str):
                slot["signature"] = google["thought_signature"]

    def result(self) -> ModelTurn:
        content: list[Block] = []
        if self.reasoning:
            content.append(ReasoningBlock(text="".join(self.reasoning), provider=self.provider))
        if self.text:
            content.append(TextBlock(text="".join(self.text)))
        for index in sorted(self.calls):
            slot = self.calls[index]
            args, bad = parse_arguments(slot["arguments"])
            content.append(
                ToolCallBlock(
                    id=slot["id"] or f"call_{index}",
                    name=slot["name"],
                    arguments=args,
                    raw_arguments=bad,
                    signature=slot["signature"] or None,
                )
            )
        details = self.usage.get("prompt_tokens_details") or {}
        cached, written = details.get("cached_tokens") or 0, details.get("cache_write_tokens") or 0
        turn_usage = Usage(
            input_tokens=max(0, (self.usage.get("prompt_tokens") or 0) - cached - written),
            output_tokens=self.usage.get("completion_tokens") or 0,
            cache_read_input_tokens=cached,
            cache_creation_input_tokens=written,
        )
        stop = "tool_use" if self.calls else _FINISH.get(self.finish or "stop", self.finish)
        return ModelTurn(content=tuple(content), stop_reason=stop, usage=turn_usage, model=self.model)


def _call(block: ToolCallBlock) -> dict[str, Any]:
    raw = (
        block.raw_arguments or "{}"
        if block.arguments is None
        else json.dumps(block.arguments, ensure_ascii=False)
    )
    out: dict[str, Any] = {
        "id": block.id,
        "type": "function",
        "function": {"name": block.name, "arguments": raw},
    }
    if block.signature is not None:
        out["extra_content"] = {"google": {"thought_signature": block.signature}}
    return out


def _messages(message: Message) -> list[dict[str, Any]]:
    if message.role == "assistant":
        text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
        calls = [_call(b) for b in message.content if isinstance(b, ToolCallBlock)]
        out: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            out["tool_calls"] = calls
        return [out] if text or calls else []
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            results.append(
                {"role": "tool", "tool_call_id": block.call_id, "content": block.content or "(no output)"}
            )
            parts.extend(
                {"type": "image_url", "image_url": {"url": data_url(i.media_type, i.data)}}
                for i in block.images
            )
        elif isinstance(block, TextBlock) and block.text:
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            parts.append(
                {
                    "type": "image_url",
                    "image_url": {"url": data_url(block.image.media_type, block.image.data)},
                }
            )
    if parts:
        only_text = all(p["type"] == "text" for p in parts)
        results.append(
            {"role": "user", "content": "\n\n".join(p["text"] for p in parts) if only_text else parts}
        )
    return results
