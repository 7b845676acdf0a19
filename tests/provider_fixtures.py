"""Shared helpers for the provider tests: the fake server module, a recording sink, SDK oracles."""

from __future__ import annotations

import copy
import importlib.util
import sys
from functools import cache
from pathlib import Path
from typing import Any

from mermaid_cli.providers.http import Endpoint

ROOT = Path(__file__).resolve().parent.parent


def _load_fake():
    name = "fake_provider"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "fixtures" / "fake_provider.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


fake_provider = _load_fake()
FakeProviderServer = fake_provider.FakeProviderServer
FAKE_KEY = "sk-fake-secret-key-0123456789"


class RecordingSink:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.reasonings: list[str] = []
        self.retries: list[tuple[str, str | None]] = []

    def text(self, delta: str) -> None:
        self.texts.append(delta)

    def reasoning(self, delta: str) -> None:
        self.reasonings.append(delta)

    def retry(self, message: str, code: str | None = None) -> None:
        self.retries.append((message, code))


def endpoint(
    server: Any, provider: str = "anthropic", model: str = "claude-sonnet-4-5", **kw: Any
) -> Endpoint:
    base = server.url if provider == "anthropic" else server.url + "/v1"
    return Endpoint(provider=provider, model=model, base_url=base, api_key=FAKE_KEY, **kw)


def turn(*content: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "turn", "content": list(content), **extra}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def call(id_: str, name: str, arguments: Any = None, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": id_, "name": name, "arguments": arguments, **extra}


def fault(kind: str, **extra: Any) -> dict[str, Any]:
    return {"type": "fault", "kind": kind, **extra}


@cache
def strict_validator(tp: Any) -> Any:
    """A pydantic-core validator for an SDK request TypedDict that rejects unknown keys at every
    level and validates lazily-typed Iterables eagerly (the SDK's own adapter does neither)."""
    from pydantic import TypeAdapter
    from pydantic_core import SchemaValidator

    schema = copy.deepcopy(TypeAdapter(tp).core_schema)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "model":
                # Request params also accept the SDK's response models (lenient, extra="allow");
                # a request we build must match a Param TypedDict, so models are ruled out.
                ref = node.get("ref")
                node.clear()
                node.update({"type": "none", **({"ref": ref} if ref else {})})
                return
            if node.get("type") == "generator":
                node["type"] = "list"
            if node.get("type") == "typed-dict" and "extras_schema" not in node:
                # (a TypedDict that declares its extra items keeps them: some beta types do)
                node["extra_behavior"] = "forbid"
                node.pop("config", None)  # its extra_fields_behavior would win over ours
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return SchemaValidator(schema)


def validate_anthropic_request(body: dict[str, Any]) -> None:
    from anthropic.types.message_create_params import MessageCreateParamsStreaming

    strict_validator(MessageCreateParamsStreaming).validate_python(body)


def validate_anthropic_beta_request(body: dict[str, Any]) -> None:
    """A request with beta-only parameters (`context_management`, compaction blocks)."""
    from anthropic.types.beta.message_create_params import MessageCreateParamsStreaming

    strict_validator(MessageCreateParamsStreaming).validate_python(body)


def validate_responses_request(body: dict[str, Any]) -> None:
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

    strict_validator(ResponseCreateParamsStreaming).validate_python(body)


def validate_chat_request(body: dict[str, Any]) -> None:
    from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

    strict_validator(CompletionCreateParamsStreaming).validate_python(body)


@cache
def _event_classes(union: Any) -> dict[str, Any]:
    import typing

    members = (
        typing.get_args(typing.get_args(union)[0])
        if typing.get_origin(union) is typing.Annotated
        else typing.get_args(union)
    )
    out = {}
    for cls in members:
        literal = cls.model_fields["type"].annotation
        for value in typing.get_args(literal):
            out[value] = cls
    return out


def validate_sdk_event(union: Any, data: dict[str, Any]) -> Any:
    """Validate one stream event against the SDK model for its `type` (precise error messages)."""
    cls = _event_classes(union)[data["type"]]
    return cls.model_validate(data)


def fake_env(server: Any, key: str = FAKE_KEY) -> dict[str, str]:
    """Environment that points `anthropic/…` and `openai/…` model ids at a running fake server."""
    return {
        "ANTHROPIC_BASE_URL": server.url,
        "OPENAI_BASE_URL": server.url + "/v1",
        "ANTHROPIC_API_KEY": key,
        "OPENAI_API_KEY": key,
    }
