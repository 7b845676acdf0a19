"""Anthropic Messages API over httpx, streaming SSE.

Prompt caching: one `cache_control` breakpoint on the last tool definition (system + tools are
the stable prefix; on the system block when there are no tools) and one on the last block of the
last message, so each turn reads what the previous one wrote. The body is encoded with a fixed key
order and `messages` last, so everything before the last message is byte-identical across turns.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from mermaid_cli.core.arguments import parse_tool_arguments
from mermaid_cli.core.kept import KeptForms, LastMade
from mermaid_cli.core.types import (
    CONTEXT_FULL,
    Block,
    CompactionBlock,
    ImageBlock,
    Message,
    ModelTurn,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSpec,
    TurnRequest,
    Usage,
)
from mermaid_cli.providers import native_tools
from mermaid_cli.providers.base import TurnSink
from mermaid_cli.providers.errors import StreamCut, map_stream_error
from mermaid_cli.providers.fallbacks import Fallbacks, with_fallbacks
from mermaid_cli.providers.http import (
    BodyEncoder,
    Endpoint,
    HttpTransport,
    with_retries,
)
from mermaid_cli.providers.models import ModelFacts

API_VERSION = "2023-06-01"
#: max_tokens when the run sets no cap: the model's limit, but at most this (Anthropic reserves
#: output rate limit by max_tokens, so the full 128K of newer models would throttle small accounts)
DEFAULT_OUTPUT_CAP = 32_000
#: thinking budget per --reasoning level (budget_tokens must be >= 1024 and < max_tokens)
THINKING_BUDGETS = {"low": 2_048, "medium": 8_192, "high": 24_576}
#: room for the answer beside a thinking budget
ANSWER_ROOM = 8_192
_EPHEMERAL = {"type": "ephemeral"}
#: server-side compaction (`[compaction] provider_native`): its beta, its context edit, and the
#: lowest trigger the API accepts
COMPACT_BETA = "compact-2026-01-12"
COMPACT_EDIT = "compact_20260112"
MIN_COMPACT_TRIGGER = 50_000
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_use",
    "max_tokens": "length",
    "refusal": "content_filter",
    # the reply reached the end of the context window: the loop compacts and continues
    "model_context_window_exceeded": CONTEXT_FULL,
}


_parse_args = parse_tool_arguments  # the one parser (core/arguments.py)


class AnthropicProvider:
    #: whether this endpoint offers the compaction context edit (a subclass for another host may
    #: say no); the model's row says whether the model does
    SERVER_COMPACTION: ClassVar[bool] = True

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.model_id = endpoint.model_id
        self._http = HttpTransport(
            endpoint.provider,
            secrets=endpoint.secrets,
            connect_timeout=endpoint.connect_timeout,
            base_url=endpoint.base_url,
        )
        #: what this run's requests leave out since the API refused it (see fallbacks.py)
        self.fallbacks = Fallbacks()
        #: the `anthropic-beta` value the last request's native tools need (the computer tool)
        self._beta: str | None = None
        #: each message's wire form (keyed by the native tools offered), encoded once
        self._wire: KeptForms[Message, dict[str, Any]] = KeptForms()
        self._encoder = BodyEncoder("messages")
        #: the tools and system prompt, the same objects while their inputs are (encoded once)
        self._tools: LastMade[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = LastMade()
        self._system: LastMade[list[dict[str, Any]]] = LastMade()

    @property
    def native_rejected(self) -> bool:
        """The API rejected the native tool definitions; ours are sent from then on."""
        return self.fallbacks.native_tools

    @property
    def native_compaction(self) -> bool:
        """The API compacts this model's context server-side when a request asks (`compact_at`)."""
        return self.SERVER_COMPACTION and self.endpoint.model_facts.compaction

    # --- request ----------------------------------------------------------------------------

    def build_body(self, request: TurnRequest, *, native: bool | None = None) -> dict[str, Any]:
        done = self.fallbacks
        use_native = self.endpoint.native_tools and not done.native_tools if native is None else native
        natives, tools = self._tools.get(
            (*request.tools, use_native, self.endpoint.model),
            lambda: self._wire_tools(request.tools, use_native),
        )
        self._beta = native_tools.anthropic_beta(natives)
        system = self._system.get((request.system, bool(tools)), lambda: _system(request.system, bool(tools)))
        facts = self.endpoint.model_facts
        limits = request_limits(facts, request.max_output_tokens, request.reasoning)
        body: dict[str, Any] = {
            "model": self.endpoint.model,
            "max_tokens": limits.pop("max_tokens"),
            "stream": True,
        }
        body.update(limits)
        schema = request.response_schema
        if schema is not None and facts.structured_output and not done.output_format:
            # The format turn asks through the API's own parameter; its prompt (in the history)
            # carries the schema too, for a model without structured outputs.
            body["output_config"] = {
                **body.get("output_config", {}),
                "format": {"type": "json_schema", "schema": schema},
            }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = tools
            if schema is not None:
                # Same tools as every turn before (append-only, cache), but none may be called.
                body["tool_choice"] = {"type": "none"}
        if request.compact_at and self.native_compaction:
            trigger = {"type": "input_tokens", "value": max(MIN_COMPACT_TRIGGER, request.compact_at)}
            body["context_management"] = {"edits": [{"type": COMPACT_EDIT, "trigger": trigger}]}
        # A native call goes back as the model wrote it only while that native tool is offered.
        offered = {n["name"] for n in natives}
        wire = self._wire.forms(request.messages, frozenset(offered), lambda m: self._message(m, offered))
        messages = [m for m in wire if m["content"]]
        if messages:  # a copy carries the breakpoint: the kept message never does
            last = messages[-1]
            block = {**last["content"][-1], "cache_control": dict(_EPHEMERAL)}
            messages[-1] = {**last, "content": [*last["content"][:-1], block]}
        body["messages"] = messages
        if "context_management" in body or _has_compaction(messages):
            # a compaction block already in the history goes back (verbatim) under its beta too
            self._beta = ",".join(b for b in (self._beta, COMPACT_BETA) if b)
        return body

    def _wire_tools(
        self, offered: tuple[ToolSpec, ...], use_native: bool
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(native tool definitions, the body's `tools`, the cache breakpoint on the last)."""
        specs, natives = native_tools.anthropic_tools(offered, use_native, self.endpoint.model)
        tools: list[dict[str, Any]] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in specs
        ]
        tools.extend(dict(n) for n in natives)
        if tools:
            tools[-1]["cache_control"] = dict(_EPHEMERAL)
        return natives, tools

    def _message(self, message: Message, offered: set[str]) -> dict[str, Any]:
        blocks = (self._block(b, offered) for b in message.content)
        return {"role": message.role, "content": [b for b in blocks if b]}

    def _block(self, block: Block, offered: set[str]) -> dict[str, Any] | None:
        if isinstance(block, TextBlock):
            return {"type": "text", "text": block.text} if block.text else None
        if isinstance(block, ImageBlock):
            return _image(block.image.media_type, block.image.data)
        if isinstance(block, ReasoningBlock):
            if block.redacted is not None:
                return {"type": "redacted_thinking", "data": block.redacted}
            if block.signature is not None:
                return {"type": "thinking", "thinking": block.text, "signature": block.signature}
            return None  # another provider's reasoning: Anthropic cannot verify it
        if isinstance(block, ToolCallBlock):
            native = native_tools.anthropic_native_use(block)
            if native is not None and native[0] not in offered:
                native = None
            name, args = (
                native if native else (block.name, block.arguments if block.arguments is not None else {})
            )
            return {"type": "tool_use", "id": block.id, "name": name, "input": args}
        if isinstance(block, ToolResultBlock):
            content: list[dict[str, Any]] = [{"type": "text", "text": block.content or "(no output)"}]
            content.extend(_image(i.media_type, i.data) for i in block.images)
            out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.call_id, "content": content}
            if block.is_error:
                out["is_error"] = True
            return out
        if isinstance(block, CompactionBlock):
            # the server's own block, as it sent it; another provider's compaction means nothing here
            return dict(block.item) if block.provider == "anthropic" else None
        return None  # pragma: no cover - the Block union is closed

    def headers(self) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": API_VERSION,
        }
        if self.endpoint.api_key:
            headers["x-api-key"] = self.endpoint.api_key
        headers.update(dict(self.endpoint.extra_headers))
        betas = self.betas()
        if betas:
            headers["anthropic-beta"] = ",".join(betas)
        return headers

    def betas(self) -> list[str]:
        """The `anthropic-beta` values: those configured in `extra_headers`, then the ones this
        body needs (the native computer tool, server-side compaction), each once."""
        given = dict(self.endpoint.extra_headers).get("anthropic-beta", "")
        out: list[str] = []
        for beta in (*given.split(","), *(self._beta or "").split(",")):
            if beta.strip() and beta.strip() not in out:
                out.append(beta.strip())
        return out

    @property
    def url(self) -> str:
        return self.endpoint.base_url.rstrip("/") + "/v1/messages"

    # --- turn -------------------------------------------------------------------------------

    async def turn(self, request: TurnRequest, sink: TurnSink) -> ModelTurn:
        return await with_fallbacks(
            self.endpoint.provider, self.fallbacks, lambda: self.build_body(request), self._send, sink
        )

    async def _send(self, body: dict[str, Any], sink: TurnSink) -> ModelTurn:
        raw = self._encoder.encode(body)
        headers = self.headers()  # the beta header of this body's native tools
        return await with_retries(
            lambda: self._attempt(raw, sink, headers),
            sink,
            deadline=self.endpoint.deadline,
            secrets=self.endpoint.secrets,
        )

    async def _attempt(self, body: bytes, sink: TurnSink, headers: dict[str, str]) -> ModelTurn:
        state = _StreamState()
        # The stream is read to its end (not left at message_stop) so the connection is reused.
        async for event in self._http.stream_events(self.url, headers, body):
            if state.done:
                continue
            data = event.json()
            kind = data.get("type") or event.event
            if kind == "error":
                raise map_stream_error("anthropic", data)
            state.feed(kind, data, sink)
        if not state.done:
            raise StreamCut()
        return state.result()

    async def aclose(self) -> None:
        await self._http.aclose()


def _has_compaction(messages: list[dict[str, Any]]) -> bool:
    return any(b.get("type") == "compaction" for m in messages for b in m["content"])


def _system(text: str, tools: bool) -> list[dict[str, Any]]:
    """The body's `system`; it carries the cache breakpoint when there are no tools to."""
    system: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    if system and not tools:
        system[-1]["cache_control"] = dict(_EPHEMERAL)
    return system


def _image(media_type: str, data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def request_limits(facts: ModelFacts, requested: int | None, reasoning: str | None) -> dict[str, Any]:
    """`max_tokens`, `thinking` and `output_config` as the model's row allows them."""
    max_tokens = facts.output_cap(requested, DEFAULT_OUTPUT_CAP)
    out: dict[str, Any] = {"max_tokens": max_tokens}
    mode = facts.thinking.mode
    if reasoning == "none":
        # Only a model that can think and is not always thinking is told not to.
        if mode == "adaptive" and not facts.thinking.always_on:
            out["thinking"] = {"type": "disabled"}
        return out
    effort = facts.effort(reasoning)
    if effort is None:
        return out
    if mode == "adaptive":
        out["thinking"] = {"type": "adaptive"}
        out["output_config"] = {"effort": effort}
    elif mode == "budget":
        budget = THINKING_BUDGETS.get(effort, THINKING_BUDGETS["medium"])
        if max_tokens <= budget:
            max_tokens = min(facts.max_output, budget + ANSWER_ROOM)
        # budget_tokens must stay below max_tokens and at least 1024
        budget = min(budget, max_tokens - 1_024)
        if budget >= 1_024:
            out["max_tokens"] = max_tokens
            out["thinking"] = {"type": "enabled", "budget_tokens": budget}
    return out


class _StreamState:
    """Accumulates one streamed message. Blocks of unknown type are kept aside and ignored."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, int] = {}
        #: tokens of a server-side compaction (`usage.iterations`), not in the top-level counts
        self.compaction_usage = Usage()
        self.stop_reason: str | None = None
        self.model: str | None = None
        self.done = False

    def feed(self, kind: str | None, data: dict[str, Any], sink: TurnSink) -> None:
        if kind == "message_start":
            message = data.get("message") or {}
            self.model = message.get("model")
            self._usage(message.get("usage"))
        elif kind == "content_block_start":
            block = dict(data.get("content_block") or {})
            block.setdefault("_json", "")
            self.blocks[int(data.get("index", len(self.blocks)))] = block
            if block.get("type") == "text" and block.get("text"):
                sink.text(block["text"])
        elif kind == "content_block_delta":
            block = self.blocks.setdefault(int(data.get("index", 0)), {"type": "unknown", "_json": ""})
            delta = data.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
                sink.text(delta.get("text", ""))
            elif dtype == "input_json_delta":
                block["_json"] += delta.get("partial_json", "")
            elif dtype == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
                sink.reasoning(delta.get("thinking", ""))
            elif dtype == "signature_delta":
                block["signature"] = block.get("signature", "") + delta.get("signature", "")
            elif dtype == "compaction_delta":
                # the summary arrives whole in one delta (the SDK's accumulator sets, not appends)
                block["content"] = delta.get("content")
                block["encrypted_content"] = delta.get("encrypted_content")
        elif kind == "message_delta":
            delta = data.get("delta") or {}
            if delta.get("stop_reason"):
                self.stop_reason = delta["stop_reason"]
            self._usage(data.get("usage"))
        elif kind == "message_stop":
            self.done = True
        # ping, content_block_stop and unknown events need nothing

    def _usage(self, usage: dict[str, Any] | None) -> None:
        for key, value in (usage or {}).items():
            if isinstance(value, int):
                self.usage[key] = value
        iterations = (usage or {}).get("iterations")
        if isinstance(iterations, list):
            # the compaction entries are billed but left out of the top-level counts
            spent = [i for i in iterations if isinstance(i, dict) and i.get("type") == "compaction"]
            self.compaction_usage = sum((_iteration_usage(i) for i in spent), Usage())

    def result(self) -> ModelTurn:
        content: list[Block] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            btype = block.get("type")
            if btype == "text":
                if block.get("text"):
                    content.append(TextBlock(text=block["text"]))
            elif btype == "thinking":
                content.append(
                    ReasoningBlock(
                        text=block.get("thinking", ""),
                        signature=block.get("signature") or None,
                        provider="anthropic",
                    )
                )
            elif btype == "redacted_thinking":
                content.append(ReasoningBlock(redacted=str(block.get("data", "")), provider="anthropic"))
            elif btype == "tool_use":
                raw = block["_json"]
                if not raw and isinstance(block.get("input"), dict) and block["input"]:
                    raw = json.dumps(block["input"])
                args, bad = _parse_args(raw)
                call = ToolCallBlock(
                    id=str(block.get("id", f"toolu_{index}")),
                    name=str(block.get("name", "")),
                    arguments=args,
                    raw_arguments=bad,
                )
                content.append(native_tools.rewrite_anthropic(call))
            elif btype == "compaction":
                item = {k: v for k, v in block.items() if k != "_json"}
                content.append(
                    CompactionBlock(provider="anthropic", item=item, text=str(block.get("content") or ""))
                )
        usage = _iteration_usage(self.usage) + self.compaction_usage
        stop = _STOP_REASONS.get(self.stop_reason or "", self.stop_reason)
        return ModelTurn(content=tuple(content), stop_reason=stop, usage=usage, model=self.model)


def _iteration_usage(usage: dict[str, Any]) -> Usage:
    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) else 0

    return Usage(
        input_tokens=count("input_tokens"),
        output_tokens=count("output_tokens"),
        cache_read_input_tokens=count("cache_read_input_tokens"),
        cache_creation_input_tokens=count("cache_creation_input_tokens"),
    )
