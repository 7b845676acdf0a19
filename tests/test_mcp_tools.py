"""Pure parts of the MCP tool layer: names, schema normalisation, content conversion."""

from __future__ import annotations

import re
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from mermaid_cli.integrations.mcp.tools import (
    McpToolAdapter,
    call_result_to_tool_result,
    convert_resource_contents,
    normalize_schema,
    tool_name,
)

PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="


def test_plain_name() -> None:
    assert tool_name("github", "create_issue") == "mcp__github__create_issue"


def test_name_sanitised_and_capped_with_stable_hash() -> None:
    raw = "a_really_long_tool_name_that_goes_on_and_on.with.dots and spaces"
    name = tool_name("my server", raw)
    assert re.fullmatch(r"[A-Za-z0-9_-]+", name)
    assert len(name) <= 64
    assert name.startswith("mcp__my_server__a_really")
    assert tool_name("my server", raw) == name  # stable across runs


def test_collision_gets_distinct_name() -> None:
    first = tool_name("s", "a.b")
    second = tool_name("s", "a b", taken={first})
    assert first == "mcp__s__a_b"
    assert second != first and second.startswith("mcp__s__a_b_")


@given(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=200))
def test_any_name_is_valid(server: str, raw: str) -> None:
    name = tool_name(server, raw)
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name)


def test_schema_refs_inlined_and_keywords_dropped() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "title": "lookupArguments",
        "$defs": {
            "Point": {
                "title": "Point",
                "type": "object",
                "properties": {"x": {"type": "integer", "title": "X"}, "kind": {"const": "pt"}},
                "required": ["x"],
            }
        },
        "properties": {
            "point": {"$ref": "#/$defs/Point", "description": "where"},
            "label": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Label"},
            "n": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "x-mcp-header": "N"},
            # a property literally named like a keyword is data, not a keyword
            "title": {"type": "string"},
        },
        "required": ["point"],
    }
    out = normalize_schema(schema)
    assert "$defs" not in out and "$schema" not in out and "title" not in out
    assert out["properties"]["point"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "kind": {"enum": ["pt"]}},
        "required": ["x"],
        "description": "where",
    }
    assert out["properties"]["label"] == {"type": "string", "default": None}
    assert out["properties"]["n"] == {"type": "number", "minimum": 0}
    assert out["properties"]["title"] == {"type": "string"}
    assert out["required"] == ["point"]
    assert schema["$defs"]["Point"]["title"] == "Point"  # input untouched


def test_recursive_ref_terminates() -> None:
    schema = {
        "type": "object",
        "definitions": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/definitions/Node"}}}},
        "properties": {"root": {"$ref": "#/definitions/Node"}},
    }
    out = normalize_schema(schema)
    assert out["properties"]["root"]["type"] == "object"
    assert "$ref" not in repr(out)


def test_root_always_object() -> None:
    assert normalize_schema(None) == {"type": "object", "properties": {}}
    assert normalize_schema({"type": "object"}) == {"type": "object", "properties": {}}


def test_call_result_conversion() -> None:
    result = SimpleNamespace(
        content=[
            SimpleNamespace(type="text", text="line one"),
            SimpleNamespace(type="image", data=PNG_B64, mime_type="image/png"),
            SimpleNamespace(type="audio", data=PNG_B64, mime_type="audio/wav"),
        ],
        structured_content=None,
        is_error=False,
    )
    out = call_result_to_tool_result(result, "s/t")
    assert not out.is_error
    assert out.images[0].media_type == "image/png" and out.images[0].data == PNG_B64
    assert "line one" in out.content and "[audio: audio/wav" in out.content
    err = call_result_to_tool_result(
        SimpleNamespace(content=[SimpleNamespace(type="text", text="boom")], is_error=True), "s/t"
    )
    assert err.is_error and err.content == "boom"
    structured = call_result_to_tool_result(
        SimpleNamespace(content=[], structured_content={"sum": 3}, is_error=False), "s/t"
    )
    assert structured.content == '{"sum": 3}'


def test_resource_contents_conversion() -> None:
    texts, images = convert_resource_contents(
        [
            SimpleNamespace(uri="a://t", mime_type="text/plain", text="hello"),
            SimpleNamespace(uri="a://i", mime_type="image/png", blob=PNG_B64),
            SimpleNamespace(uri="a://b", mime_type="application/pdf", blob="AAAA"),
        ]
    )
    assert texts[0] == "hello"
    assert len(images) == 1
    assert texts[2] == "[binary: a://b (application/pdf, 3 bytes)]"


def test_adapter_accepts_any_arguments_and_exposes_schema() -> None:
    adapter = McpToolAdapter(
        backend=None,  # type: ignore[arg-type]
        server="s",
        raw_name="t",
        name="mcp__s__t",
        description="d",
        input_schema={"type": "object", "properties": {"a": {"type": "integer"}}},
        read_only_hint=True,
    )
    args = adapter.Args.model_validate({"a": 1, "nested": {"b": [1, 2]}})
    assert args.model_dump() == {"a": 1, "nested": {"b": [1, 2]}}
    assert adapter.spec().input_schema == {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert adapter.category == "mcp" and adapter.read_only_hint is True


def test_modules_do_not_import_the_sdk() -> None:
    """`mcp` costs about a second to import: only a configured server may pay it."""
    import subprocess
    import sys

    code = (
        "import sys, mermaid_cli.integrations.mcp, mermaid_cli.integrations.mcp.manager, mermaid_cli.integrations.mcp.tools, mermaid_cli.integrations.mcp.prompts, "
        "mermaid_cli.cli.mcp, mermaid_cli.integrations.mcp.oauth, mermaid_cli.config.sections.mcp, "
        "mermaid_cli.integrations.mcp.oauth_flow, mermaid_cli.integrations.mcp.oauth_store\n"
        "bad = [m for m in ('mcp', 'mcp_types', 'httpx', 'httpx2', 'keyring', 'anyio') if m in sys.modules]\n"
        "print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
