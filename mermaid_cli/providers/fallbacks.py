"""Fallbacks that read the provider's error: what a request is sent again without, for the run.

A 400 that names a part of the request Mermaid can do without is answered by the same request
without that part, once, and the client leaves it out for the rest of the run (`Fallbacks`):

- `native_tools`: the vendor-native tool definitions (text editor, bash, apply_patch, computer),
  when the message names one of their types; our own schemas are offered instead.
- `stream`: OpenAI's "Your organization must be verified to stream this model" (param `stream`);
  the request is sent with `stream: false` and the whole response read at once.
- `reasoning_summary`: OpenAI's "Your organization must be verified to generate reasoning
  summaries" (param `reasoning.summary`); `reasoning.summary` is left out.
- `output_format`: a structured-output parameter (`output_config.format`, `text.format`,
  `response_format`) the model or server refuses; the format turn's own prompt carries the schema.

Only top-level parameters and tool definitions change; `messages`/`input` never do, so the
conversation stays append-only across a fallback (the provider tests check the request log).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from mermaid_cli.core.errors import ContextTooLong, ProviderError
from mermaid_cli.core.types import ModelTurn
from mermaid_cli.providers import native_tools
from mermaid_cli.providers.base import TurnSink

Kind = Literal["native_tools", "stream", "reasoning_summary", "output_format"]

_STREAM_PHRASE = "must be verified to stream"
_SUMMARY_PHRASE = "must be verified to generate reasoning summar"
# Words of a refusal that is about the structured-output parameter (only read when one was sent).
_FORMAT_WORDS = (
    "output_config",
    "output_format",
    "response_format",
    "json_schema",
    "text.format",
    "structured output",
    "output format",
)
_NOTES: dict[Kind, str] = {
    "native_tools": "rejected the native tool definitions; using Mermaid's tool schemas",
    "stream": "refused streaming for this organization (not verified); sending requests without streaming",
    "reasoning_summary": "refused reasoning summaries for this organization (not verified); leaving them out",
    "output_format": "refused the structured-output parameter; the format turn relies on its prompt",
}


@dataclass
class Fallbacks:
    """What this run's requests leave out, each set by the error that refused it."""

    native_tools: bool = False
    stream: bool = False
    reasoning_summary: bool = False
    output_format: bool = False

    def drop(self, kind: Kind) -> None:
        setattr(self, kind, True)


def natives_offered(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The vendor-native tool definitions of a request (ours have no type or type `function`)."""
    return [t for t in body.get("tools") or [] if t.get("type") not in (None, "function")]


def _format_sent(body: dict[str, Any]) -> bool:
    output_config = body.get("output_config") or {}
    text = body.get("text") or {}
    return "format" in output_config or "format" in text or "response_format" in body


def _summary_sent(body: dict[str, Any]) -> bool:
    return "summary" in (body.get("reasoning") or {})


def refused(exc: ProviderError, body: dict[str, Any], done: Fallbacks) -> Kind | None:
    """Which part of `body` the error refuses, if it is one we can leave out and have not yet."""
    if isinstance(exc, ContextTooLong) or exc.status_code != 400:
        return None
    message = exc.message.lower()
    if not done.stream and body.get("stream") and _STREAM_PHRASE in message:
        return "stream"
    if not done.reasoning_summary and _summary_sent(body) and _SUMMARY_PHRASE in message:
        return "reasoning_summary"
    offered = natives_offered(body)
    if not done.native_tools and offered and native_tools.rejected_natives(exc, offered):
        return "native_tools"
    if not done.output_format and _format_sent(body) and any(w in message for w in _FORMAT_WORDS):
        return "output_format"
    return None


async def with_fallbacks(
    provider: str,
    done: Fallbacks,
    build: Callable[[], dict[str, Any]],
    send: Callable[[dict[str, Any], TurnSink], Awaitable[ModelTurn]],
    sink: TurnSink,
) -> ModelTurn:
    """`send(build())`, and again after each refusal `refused` recognises (at most once per kind)."""
    while True:
        body = build()
        try:
            return await send(body, sink)
        except ProviderError as exc:
            kind = refused(exc, body, done)
            if kind is None:
                raise
        done.drop(kind)
        sink.retry(f"{provider} {_NOTES[kind]}", f"{kind}_rejected")
