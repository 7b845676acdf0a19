"""OpenAI Responses API over httpx, streaming SSE.

Stateless on purpose (`store: false`, no `previous_response_id`): the whole conversation goes with
every request, reasoning items included (their `encrypted_content` is requested with `include`),
so a run can resume from a session file and the request prefix stays cacheable. `input` is the
last key of the body so everything before the newest item is byte-identical across turns.
"""

from __future__ import annotations

import json
from typing import Any

from mermaid_cli.core.arguments import parse_tool_arguments
from mermaid_cli.core.types import (
    Block,
    CompactionBlock,
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
from mermaid_cli.providers import native_tools
from mermaid_cli.providers.base import TurnSink
from mermaid_cli.providers.errors import StreamCut, map_stream_error
from mermaid_cli.providers.fallbacks import Fallbacks, with_fallbacks
from mermaid_cli.providers.http import (
    Endpoint,
    HttpTransport,
    encode,
    with_retries,
)
from mermaid_cli.providers.models import ModelFacts

parse_arguments = parse_tool_arguments  # the one parser (core/arguments.py)


def data_url(media_type: str, data: str) -> str:
    return f"data:{media_type};base64,{data}"


class OpenAIResponsesProvider:
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

    @property
    def native_rejected(self) -> bool:
        return self.fallbacks.native_tools

    @property
    def native_compaction(self) -> bool:
        """The API compacts this model's context server-side when a request asks (`compact_at`)."""
        return self.endpoint.model_facts.compaction

    @property
    def url(self) -> str:
        return self.endpoint.base_url.rstrip("/") + "/responses"

    def headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if self.endpoint.api_key:
            headers["authorization"] = f"Bearer {self.endpoint.api_key}"
        headers.update(dict(self.endpoint.extra_headers))
        return headers

    # --- request ----------------------------------------------------------------------------

    def build_body(self, request: TurnRequest, *, native: bool | None = None) -> dict[str, Any]:
        done = self.fallbacks
        use_native = self.endpoint.native_tools and not done.native_tools if native is None else native
        specs, natives = native_tools.openai_tools(request.tools, use_native)
        tools: list[dict[str, Any]] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
                "strict": False,
            }
            for t in specs
        ]
        tools.extend(dict(n) for n in natives)
        model = self.endpoint.model
        body: dict[str, Any] = {"model": model, "stream": not done.stream, "store": False}
        if request.system:
            body["instructions"] = request.system
        if tools:
            body["tools"] = tools
            if request.response_schema is not None:
                # The format turn keeps the same tools (append-only, cache) but may not call them.
                body["tool_choice"] = "none"
        params = reasoning_params(self.endpoint.model_facts, request.reasoning, request.max_output_tokens)
        if done.reasoning_summary and "reasoning" in params:
            params["reasoning"].pop("summary", None)
        body.update(params)
        if request.response_schema is not None and not done.output_format:
            body["text"] = {
                "format": {
                    "type": "json_schema",
                    "name": "output",
                    "schema": request.response_schema,
                    "strict": False,
                }
            }
        # Native calls (apply_patch, computer) go back as written only while their tool is offered.
        offered = {str(n.get("type")) for n in natives}
        patch_calls: dict[str, dict[str, Any]] = {}
        for m in request.messages:
            for b in m.content:
                if not isinstance(b, ToolCallBlock):
                    continue
                item = native_tools.openai_native_item(b)
                if item is not None and _NATIVE_KINDS.get(str(item.get("type"))) in offered:
                    patch_calls[b.id] = item
        if request.compact_at and self.native_compaction:
            body["context_management"] = [{"type": "compaction", "compact_threshold": request.compact_at}]
        items: list[dict[str, Any]] = []
        for message in request.messages:
            items.extend(
                _user_items(message.content, patch_calls)
                if message.role == "user"
                else self._items(message, patch_calls)
            )
        body["input"] = items
        return body

    def _items(self, message: Message, patch_calls: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for block in message.content:
            if isinstance(block, TextBlock) and block.text:
                items.append({"role": "assistant", "content": block.text})
            elif (
                isinstance(block, ReasoningBlock)
                and block.item is not None
                and block.provider in (None, "openai")
            ):
                items.append(_reasoning_input(block.item))
            elif isinstance(block, CompactionBlock) and block.provider == "openai":
                # the encrypted item goes back in place; the server reads the context from it on
                items.append(_compaction_input(block.item))
            elif isinstance(block, ToolCallBlock):
                native = patch_calls.get(block.id)
                if native is not None and native.get("type") == "computer_call":
                    items.append(native_tools.openai_computer_input(native))
                elif native is not None:
                    items.append(_apply_patch_input(native))
                else:
                    raw = (
                        block.raw_arguments
                        if block.arguments is None
                        else json.dumps(block.arguments, ensure_ascii=False)
                    )
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": block.id,
                            "name": block.name,
                            "arguments": raw or "{}",
                        }
                    )
        # A reasoning item must be followed by the item it led to; a reply cut off while reasoning
        # (`incomplete`, only a reasoning item) is never sent with the item alone. The rule holds
        # from the first request that holds the message, so the input stays append-only.
        while items and items[-1].get("type") == "reasoning":
            items.pop()
        return items

    # --- turn -------------------------------------------------------------------------------

    async def turn(self, request: TurnRequest, sink: TurnSink) -> ModelTurn:
        return await with_fallbacks(
            self.endpoint.provider, self.fallbacks, lambda: self.build_body(request), self._send, sink
        )

    async def _send(self, body: dict[str, Any], sink: TurnSink) -> ModelTurn:
        raw = encode(body)
        attempt = self._attempt if body.get("stream") else self._attempt_whole
        return await with_retries(
            lambda: attempt(raw, sink), sink, deadline=self.endpoint.deadline, secrets=self.endpoint.secrets
        )

    async def _attempt_whole(self, body: bytes, sink: TurnSink) -> ModelTurn:
        """One request sent with `stream: false`: the response object holds every output item."""
        response = await self._http.post_json(self.url, self.headers(), body)
        if not isinstance(response, dict):
            raise ValueError("the response is not a JSON object")
        if response.get("status") == "failed" or response.get("error"):
            raise map_stream_error(self.endpoint.provider, {"error": response.get("error") or {}})
        turn = _turn_from_output(response.get("output") or [], response)
        for block in turn.content:
            if isinstance(block, ReasoningBlock) and block.text:
                sink.reasoning(block.text)
            elif isinstance(block, TextBlock):
                sink.text(block.text)
        return turn

    async def _attempt(self, body: bytes, sink: TurnSink) -> ModelTurn:
        items: dict[int, dict[str, Any]] = {}
        final: dict[str, Any] | None = None
        async for event in self._http.stream_events(self.url, self.headers(), body):
            if final is not None:
                continue  # read to the end so the connection is reused
            data = event.json()
            kind = data.get("type") or event.event
            if kind == "response.output_text.delta":
                sink.text(data.get("delta", ""))
            elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
                sink.reasoning(data.get("delta", ""))
            elif kind == "response.output_item.done":
                items[int(data.get("output_index", len(items)))] = data.get("item") or {}
            elif kind in ("response.completed", "response.incomplete"):
                final = data.get("response") or {}
            elif kind == "response.failed":
                response = data.get("response") or {}
                raise map_stream_error(
                    self.endpoint.provider, {"error": response.get("error") or {"message": "response failed"}}
                )
            elif kind == "error":
                raise map_stream_error(self.endpoint.provider, data)
        if final is None:
            raise StreamCut()
        # The completed response lists every output item; prefer it, fall back to the streamed ones.
        output = final.get("output") or [items[i] for i in sorted(items)]
        return _turn_from_output(output, final)

    async def aclose(self) -> None:
        await self._http.aclose()


def reasoning_params(facts: ModelFacts, level: str | None, max_output: int | None) -> dict[str, Any]:
    """`reasoning`, `include` and `max_output_tokens` as the model's row allows them."""
    out: dict[str, Any] = {}
    thinks = facts.thinking.mode == "effort"
    effort = facts.effort(level) if thinks else None
    if effort is not None:
        out["reasoning"] = {"effort": effort}
        if level != "none":
            out["reasoning"]["summary"] = "auto"
    if thinks:
        # reasoning items go back with every request (stateless), so ask for them encrypted
        out["include"] = ["reasoning.encrypted_content"]
    if max_output:
        out["max_output_tokens"] = facts.output_cap(max_output, max_output)
    return out


#: native output item type -> the tool type that offers it
_NATIVE_KINDS = {"apply_patch_call": "apply_patch", "computer_call": "computer"}
#: a 1x1 PNG, for a computer call that ended without a screenshot (the API wants one)
_BLANK_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="


def _user_items(blocks: tuple[Block, ...], patch_calls: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in blocks:
        computer = patch_calls.get(block.call_id) if isinstance(block, ToolResultBlock) else None
        if isinstance(block, ToolResultBlock) and computer and computer.get("type") == "computer_call":
            shot = block.images[0] if block.images else None
            url = data_url(shot.media_type, shot.data) if shot else data_url("image/png", _BLANK_PNG)
            items.append(native_tools.openai_computer_output(computer, block.call_id, url))
            if block.is_error or shot is None:  # the output item has no room for words
                parts.append(
                    {"type": "input_text", "text": f"computer call {block.call_id}: {block.content}"}
                )
        elif isinstance(block, ToolResultBlock):
            items.append(_tool_output(block, block.call_id in patch_calls))
            parts.extend(
                {"type": "input_image", "image_url": data_url(i.media_type, i.data), "detail": "auto"}
                for i in block.images
            )
        elif isinstance(block, TextBlock) and block.text:
            parts.append({"type": "input_text", "text": block.text})
        elif isinstance(block, ImageBlock):
            parts.append(
                {
                    "type": "input_image",
                    "image_url": data_url(block.image.media_type, block.image.data),
                    "detail": "auto",
                }
            )
    if parts:
        items.append({"role": "user", "content": parts})
    return items


def _tool_output(block: ToolResultBlock, apply_patch: bool) -> dict[str, Any]:
    # A native apply_patch call must be answered with its own output item type.
    if apply_patch:
        return {
            "type": "apply_patch_call_output",
            "call_id": block.call_id,
            "status": "failed" if block.is_error else "completed",
            "output": block.content,
        }
    return {
        "type": "function_call_output",
        "call_id": block.call_id,
        "output": block.content or "(no output)",
    }


def _reasoning_input(item: dict[str, Any]) -> dict[str, Any]:
    keep = ("type", "id", "summary", "content", "encrypted_content")
    out = {k: item[k] for k in keep if k in item and item[k] is not None}
    out.setdefault("summary", [])
    return out


def _compaction_input(item: dict[str, Any]) -> dict[str, Any]:
    # the input form of a compaction item takes these fields only (`created_by` is output-only)
    keep = ("type", "id", "encrypted_content")
    return {k: item[k] for k in keep if k in item and item[k] is not None}


def _apply_patch_input(item: dict[str, Any]) -> dict[str, Any]:
    keep = ("type", "id", "call_id", "operation", "status")
    out = {k: item[k] for k in keep if k in item and item[k] is not None}
    out["status"] = "completed"
    return out


def _block_from_item(item: dict[str, Any]) -> Block | None:
    """Our block for one Responses output item; None for items that are not ours (web_search_call...)."""
    itype = item.get("type")
    if itype == "message":
        parts = item.get("content") or []
        text = "".join(p.get("text", "") for p in parts if p.get("type") == "output_text")
        refusal = "".join(p.get("refusal", "") for p in parts if p.get("type") == "refusal")
        return TextBlock(text=text or refusal) if text or refusal else None
    if itype == "reasoning":
        summary = "\n\n".join(s.get("text", "") for s in item.get("summary") or [] if isinstance(s, dict))
        return ReasoningBlock(text=summary, provider="openai", item=item)
    if itype == "function_call":
        args, bad = parse_arguments(item.get("arguments") or "")
        return ToolCallBlock(
            id=str(item.get("call_id") or item.get("id")),
            name=str(item.get("name")),
            arguments=args,
            raw_arguments=bad,
        )
    if itype == "apply_patch_call":
        return native_tools.rewrite_openai_apply_patch(item)
    if itype == "computer_call":
        return native_tools.rewrite_openai_computer(item)
    if itype == "compaction":
        return CompactionBlock(provider="openai", item=item)
    return None


def _usage(response: dict[str, Any]) -> Usage:
    usage_in = response.get("usage") or {}
    details = usage_in.get("input_tokens_details") or {}
    cached, written = details.get("cached_tokens") or 0, details.get("cache_write_tokens") or 0
    return Usage(
        input_tokens=max(0, (usage_in.get("input_tokens") or 0) - cached - written),
        output_tokens=usage_in.get("output_tokens") or 0,
        cache_read_input_tokens=cached,
        cache_creation_input_tokens=written,
    )


def _stop_reason(content: list[Block], response: dict[str, Any]) -> str:
    if any(isinstance(b, ToolCallBlock) for b in content):
        return "tool_use"
    if response.get("status") == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason")
        return "length" if reason == "max_output_tokens" else (reason or "incomplete")
    return "stop"


def _turn_from_output(output: list[dict[str, Any]], response: dict[str, Any]) -> ModelTurn:
    content = [b for b in (_block_from_item(item) for item in output) if b is not None]
    return ModelTurn(
        content=tuple(content),
        stop_reason=_stop_reason(content, response),
        usage=_usage(response),
        model=response.get("model"),
    )
