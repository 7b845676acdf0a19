"""Generates docs/configuration.md from the Settings model, so the reference cannot drift:

python -m mermaid_cli.config.docs > docs/configuration.md
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

HEADER = """# Configuration reference

Generated from the settings models (`python -m mermaid_cli.config.docs > docs/configuration.md`);
a test fails when this file is stale.

Config is TOML, layered (later wins): built-in defaults < user file (`$MERMAID_CONFIG_DIR/config.toml`,
else `~/.config/mermaid/config.toml`) < `[profiles.NAME]` of the user file (`--profile NAME`) <
project file (`<git root>/.mermaid/config.toml`) < `--policy` preset < `-c key.path=VALUE` (VALUE is
TOML: `true`, `3`, `"x"`, `[1, 2]`; a bare word is a string) < dedicated flags (`--model`,
`--safety`, `--max-turns`, ...). `mermaid config show [--json]` prints the effective value of every
key and the layer it came from.

An unknown key or a bad value is exit 2, naming the file (or `-c`/flag), the dotted key and the
reason; so is a config file that is not a regular file (a FIFO, a device) or is over 1 MiB. A
project file is committed with the code and may come from an untrusted pull request, so
it may only tighten safety: it cannot loosen `safety.mode`, `safety.network` or
`safety.filesystem`, add `allow` overrides, or set `model`, `providers`, `mcp_servers`, `web`,
`pricing`, `hooks`, `verify.commands`, `exec.env_allow`, `safety.allow_readonly_web`,
`safety.allow_untrusted_headless_tools` or `safety.auto_classifier_model`, and every numeric limit
or budget (`run.max_turns`, `run.max_cost`, `run.max_tokens`, `run.timeout`, `verify.timeout`,
`verify.attempts`, exec timeouts, output caps...) may only go down relative to the layers below it
(those are ignored with a warning on stderr naming the key). Nor may it undo a stricter choice of
the layers below: `sandbox.mode` only moves toward `on` (`off` < `best-effort` < `auto` < `on`);
`exec.fail_on_tool_error` may only be turned on, `memory.enabled`, `tools.provider_native` and
`tools.computer` only off, `safety.checkpoint_on_mutation` never off; its `safety.overrides`,
`agents.deny_tools`, `agents.deny_servers` and `tools.disabled` are added after the user's, never
in their place (the first matching override decides, so the user's rules stay first); and it may
add `[agents.types.NAME]` tables but not redefine one the user's config defines, nor set a type's
`model`.

Provider keys never come from config files: they come from the environment or the OS keyring
(`mermaid login PROVIDER`). `MERMAID_DATA_DIR` relocates checkpoints (default
`~/.local/share/mermaid`). `MERMAID_NO_EARLY_REQUEST=1` turns off the early first request (a plain
`exec` with no config files sends its first model request at start, from a recipe kept beside the
bytecode: docs/ci.md).
"""


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(json.dumps(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        parts = [_type_name(a) for a in args if a is not type(None)]
        name = " \\| ".join(parts)
        return f"{name} (optional)" if type(None) in args else name
    if origin is list:
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return f"table of {_type_name(args[1])}" if len(args) == 2 else "table"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    return getattr(annotation, "__name__", str(annotation))


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
        if isinstance(value, BaseModel):
            return ""
        return f"`{json.dumps(value)}`"
    if field.default is PydanticUndefined:
        return "required"
    if field.default is None:
        return "unset"
    return f"`{json.dumps(field.default)}`"


def _section_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def _rows(model: type[BaseModel], prefix: str) -> tuple[list[str], list[tuple[str, type[BaseModel]]]]:
    rows: list[str] = []
    nested: list[tuple[str, type[BaseModel]]] = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        sub = _section_model(annotation)
        key = f"{prefix}{name}"
        if sub is not None and typing.get_origin(annotation) is dict:
            nested.append((f"{key}.NAME", sub))
            rows.append(f"| `{key}` | table of tables | `{{}}` | {field.description or 'See below.'} |")
            continue
        if sub is not None and typing.get_origin(annotation) is list:
            nested.append((f"{key}[]", sub))
            rows.append(f"| `{key}` | array of tables | `[]` | {field.description or 'See below.'} |")
            continue
        if sub is not None:
            nested.append((key, sub))
            continue
        description = (field.description or "").replace("|", "\\|")
        rows.append(f"| `{key}` | {_type_name(annotation)} | {_default(field)} | {description} |")
    return rows, nested


def render() -> str:
    from mermaid_cli.config.loader import Settings

    out = [HEADER]
    queue: list[tuple[str, type[BaseModel]]] = [("", Settings)]
    while queue:
        prefix, model = queue.pop(0)
        rows, nested = _rows(model, f"{prefix}." if prefix else "")
        title = f"`[{prefix}]`" if prefix else "Top-level keys"
        out.append(f"\n## {title}\n")
        doc = (model.__doc__ or "").strip().splitlines()
        if prefix and doc and not doc[0].startswith(("Base", "Config")):
            out.append(doc[0] + "\n")
        if rows:
            out.append("| key | type | default | meaning |\n|---|---|---|---|")
            out.extend(rows)
        queue.extend(nested)
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":  # pragma: no cover
    print(render(), end="")
