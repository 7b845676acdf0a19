"""`--output-schema`: the schema file check, the formatting turn's prompt, and shaping the final
answer into validated JSON.

The formatting turn is appended to the conversation like any other turn (nothing sent before is
changed): a user message that carries the schema itself, and the request asks for the format
through the provider's own parameter (Anthropic `output_config.format`, Responses `text.format`,
Chat `response_format`) with the same tools as before, none of which may be called.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from mermaid_cli.core.errors import UsageError

MAX_SCHEMA_BYTES = 64 * 1024

FORMAT_PROMPT = (
    "Convert your final answer into a single JSON object that conforms to the provided schema. "
    "Respond with only the JSON object - no prose, no code fences."
)


def format_prompt(schema: dict[str, Any]) -> str:
    """The formatting turn's user message: the instruction and the schema, in the history."""
    text = json.dumps(schema, ensure_ascii=False, sort_keys=True)
    return f"{FORMAT_PROMPT}\n\nThe JSON schema:\n{text}"


_FENCE = re.compile(r"^\s*```[^\n`]*\n(.*?)\n?```\s*$", re.DOTALL)


def load_schema(path: Path) -> dict[str, Any]:
    """The schema, checked before any model call: <= 64 KiB, JSON, a top-level object, a valid
    JSON Schema. Anything else is a usage error (exit 2) naming the file."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--output-schema {path}: cannot read: {exc.strerror}") from None
    if len(raw) > MAX_SCHEMA_BYTES:
        raise UsageError(f"--output-schema {path}: {len(raw)} bytes is over the 64 KiB limit")
    try:
        schema = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"--output-schema {path}: not valid JSON: {exc}") from None
    if not isinstance(schema, dict):
        raise UsageError(f"--output-schema {path}: the schema must be a JSON object")
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise UsageError(f"--output-schema {path}: not a valid JSON Schema: {exc.message}") from None
    return schema


def strip_fence(text: str) -> str:
    """One wrapping Markdown code fence (with an optional info string) is removed."""
    match = _FENCE.match(text)
    return match.group(1).strip() if match else text.strip()


def shape(text: str, schema: dict[str, Any]) -> tuple[str, Any, str | None]:
    """(the answer text, the parsed value or None, an `output_schema: …` error or None)."""
    import jsonschema

    body = strip_fence(text)
    if not body:
        return body, None, "output_schema: formatting turn produced no output"
    try:
        value = json.loads(body)
    except ValueError as exc:
        return body, None, f"output_schema: response is not valid JSON: {exc}"
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        return body, None, f"output_schema: response does not conform: {where}: {error.message}"
    return body, value, None
