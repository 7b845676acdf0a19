"""Provider-native tool definitions and the rewrite of their calls onto Mermaid's tools.

Models are trained on their vendor's own tools, so with `[tools] provider_native = true`:

- Anthropic gets the text editor (`text_editor_20250728`, named `str_replace_based_edit_tool`) in
  place of `read_file` / `write_file` / `edit_file` (offered only when all three are in the
  request), and `bash` (`bash_20250124`) beside `execute_command` (which keeps its timeout and
  background mode; offered when `execute_command` is in the request).
- OpenAI Responses gets OpenAI's `apply_patch` tool in place of our `apply_patch` schema.
- With `[tools] computer`, Claude gets Anthropic's computer tool and OpenAI models OpenAI's
  `computer` tool in place of our `computer` schema (see the section at the end).

Each native call is rewritten onto our tool before the ModelTurn leaves the provider, so the
policy gate, checkpoints and approvals see the tool they always see. `ToolCallBlock.native` keeps
the call as the model wrote it (`{"provider": "anthropic", "name": ..., "input": ...}` or
`{"provider": "openai", "item": {...}}`) so history sends it back unchanged.

Mapping (text editor):
- `view` → `read_file(path, offset=start, limit=end-start+1)` (read_file numbers lines, 1-based).
- `str_replace` → `edit_file(path, target_content=old_str, replacement_content=new_str)`.
- `create` → `write_file(path, content=file_text)`.
- `insert` → `apply_patch` with a zero-context unified-diff hunk `@@ -N,0 +N+1,K @@` (add K lines
  after line N). `edit_file` needs text to anchor on, which `insert` does not give; the range
  header is the exact equivalent and `apply_patch` accepts unified-diff range headers.
- `bash` → `execute_command(command, timeout=600)`; `restart: true` → `execute_command("true")`
  (each command already runs in a fresh shell, so a restart is a no-op).
A call that cannot be mapped (unknown command, missing fields) keeps its native name; the loop then
answers with an unknown-tool error the model can read.
"""

from __future__ import annotations

import sys
from typing import Any

from mermaid_cli.core.errors import ProviderError
from mermaid_cli.core.types import ToolCallBlock, ToolSpec

TEXT_EDITOR_NAME = "str_replace_based_edit_tool"
TEXT_EDITOR_TYPE = "text_editor_20250728"
BASH_NAME = "bash"
BASH_TYPE = "bash_20250124"
#: the longest foreground timeout execute_command accepts
BASH_TIMEOUT = 600

_EDITOR_REPLACES = ("read_file", "write_file", "edit_file")


def anthropic_tools(
    tools: tuple[ToolSpec, ...], native: bool, model: str = ""
) -> tuple[list[ToolSpec], list[dict[str, Any]]]:
    """(our specs still offered, native tool definitions) for one Anthropic request."""
    names = {t.name for t in tools}
    if not native:
        return list(tools), []
    natives: list[dict[str, Any]] = []
    kept, computer = anthropic_computer(list(tools), model)
    if computer is not None:
        natives.append(computer)
    if all(n in names for n in _EDITOR_REPLACES):
        kept = [t for t in kept if t.name not in _EDITOR_REPLACES]
        natives.append({"type": TEXT_EDITOR_TYPE, "name": TEXT_EDITOR_NAME})
    # Commands run under PowerShell on Windows, which the bash tool's model would not expect.
    if "execute_command" in names and BASH_NAME not in names and sys.platform != "win32":
        natives.append({"type": BASH_TYPE, "name": BASH_NAME})
    return kept, natives


def rewrite_anthropic(call: ToolCallBlock) -> ToolCallBlock:
    """Our tool call for an Anthropic native call; other calls pass through unchanged."""
    if call.name not in (TEXT_EDITOR_NAME, BASH_NAME) or call.arguments is None:
        return call
    native = {"provider": "anthropic", "name": call.name, "input": call.arguments}
    mapped = _map_editor(call.arguments) if call.name == TEXT_EDITOR_NAME else _map_bash(call.arguments)
    if mapped is None:
        return call.model_copy(update={"native": native})
    name, args = mapped
    return ToolCallBlock(id=call.id, name=name, arguments=args, native=native)


def _str(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    return value if isinstance(value, str) else None


def _map_editor(args: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    command, path = args.get("command"), _str(args, "path")
    if path is None:
        return None
    if command == "view":
        out: dict[str, Any] = {"path": path}
        rng = args.get("view_range")
        if isinstance(rng, list) and len(rng) == 2 and all(isinstance(v, int) for v in rng):
            start, end = max(1, rng[0]), rng[1]
            out["offset"] = start
            if end != -1 and end >= start:
                out["limit"] = end - start + 1
        return "read_file", out
    if command == "str_replace":
        old, new = _str(args, "old_str"), args.get("new_str", "")
        if old is None or not isinstance(new, str):
            return None
        return "edit_file", {"path": path, "target_content": old, "replacement_content": new}
    if command == "create":
        text = _str(args, "file_text")
        return None if text is None else ("write_file", {"path": path, "content": text})
    if command == "insert":
        line = args.get("insert_line")
        text = args.get("insert_text", args.get("new_str"))
        if not isinstance(line, int) or line < 0 or not isinstance(text, str):
            return None
        return "apply_patch", {"patch": insert_patch(path, line, text)}
    return None


def insert_patch(path: str, after_line: int, text: str) -> str:
    """A unified diff that inserts `text` after line `after_line` (0 = top of the file)."""
    lines = text.split("\n")
    if lines and lines[-1] == "" and len(lines) > 1:
        lines.pop()
    body = "".join(f"+{line}\n" for line in lines)
    return f"--- a/{path}\n+++ b/{path}\n@@ -{after_line},0 +{after_line + 1},{len(lines)} @@\n{body}"


def _map_bash(args: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    command = _str(args, "command")
    if command is not None:
        return "execute_command", {"command": command, "timeout": BASH_TIMEOUT}
    if args.get("restart") is True:
        return "execute_command", {"command": "true", "timeout": BASH_TIMEOUT}
    return None


def anthropic_native_use(call: ToolCallBlock) -> tuple[str, dict[str, Any]] | None:
    """(name, input) to send back for a call the model made with an Anthropic native tool."""
    native = call.native
    if native and native.get("provider") == "anthropic" and isinstance(native.get("input"), dict):
        return str(native["name"]), native["input"]
    return None


# --- OpenAI Responses: apply_patch ----------------------------------------------------------------

OPENAI_APPLY_PATCH = {"type": "apply_patch"}


def openai_tools(tools: tuple[ToolSpec, ...], native: bool) -> tuple[list[ToolSpec], list[dict[str, Any]]]:
    if not native:
        return list(tools), []
    kept, computer = openai_computer(list(tools))
    natives = [computer] if computer is not None else []
    if any(t.name == "apply_patch" for t in kept):
        kept = [t for t in kept if t.name != "apply_patch"]
        natives.append(dict(OPENAI_APPLY_PATCH))
    return kept, natives


def rewrite_openai_apply_patch(item: dict[str, Any]) -> ToolCallBlock:
    """Our `apply_patch` call for an `apply_patch_call` output item (the item kept as native)."""
    call_id = str(item.get("call_id") or item.get("id") or "")
    native = {"provider": "openai", "item": item}
    operation = item.get("operation")
    op: dict[str, Any] = operation if isinstance(operation, dict) else {}
    kind, path, diff = op.get("type"), op.get("path"), op.get("diff", "")
    if not isinstance(path, str) or not isinstance(diff, str):
        return ToolCallBlock(
            id=call_id, name="apply_patch", arguments=None, raw_arguments=str(op), native=native
        )
    if kind == "create_file":
        lines = diff if diff.startswith("+") or not diff else "".join(f"+{ln}\n" for ln in diff.splitlines())
        section = f"*** Add File: {path}\n{_nl(lines)}"
    elif kind == "update_file":
        section = f"*** Update File: {path}\n{_nl(diff)}"
    elif kind == "delete_file":
        section = f"*** Delete File: {path}\n"
    else:
        return ToolCallBlock(
            id=call_id, name="apply_patch", arguments=None, raw_arguments=str(op), native=native
        )
    patch = f"*** Begin Patch\n{section}*** End Patch\n"
    return ToolCallBlock(id=call_id, name="apply_patch", arguments={"patch": patch}, native=native)


def _nl(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def openai_native_item(call: ToolCallBlock) -> dict[str, Any] | None:
    native = call.native
    if native and native.get("provider") == "openai" and isinstance(native.get("item"), dict):
        return native["item"]
    return None


def rejected_natives(exc: ProviderError, offered: list[dict[str, Any]]) -> bool:
    """Whether the API refused the native tool definitions we offered: a 400 whose message names
    one of their types (`text_editor_20250728`, `apply_patch`). Any other 400 that mentions a tool
    (a bad tool_use id, a schema error in one of our tools) is not a reason to drop them."""
    if exc.status_code != 400:
        return False
    message = exc.message.lower()
    types = {str(t.get("type", "")).lower() for t in offered if t.get("type") not in (None, "function")}
    return any(t and t in message for t in types)


# --- the computer tool ----------------------------------------------------------------------------
#
# Claude gets Anthropic's computer tool, sized to our screenshots; its calls already have the
# shape of our `computer` arguments (same name, same fields), so they need no rewrite. OpenAI
# models get OpenAI's `computer` tool: one `computer_call` carries several actions, rewritten onto
# one `computer` call whose hidden `actions` run in order before a closing screenshot, with the
# call's `pending_safety_checks` as `warnings` for the gate; the answer is a
# `computer_call_output` carrying that screenshot.

COMPUTER_NAME = "computer"
COMPUTER_TYPE = "computer_20250124"
COMPUTER_BETA = "computer-use-2025-01-24"
#: the version with `zoom` (Claude Opus 4.5 and the 4.6+ models)
COMPUTER_ZOOM_TYPE = "computer_20251124"
COMPUTER_ZOOM_BETA = "computer-use-2025-11-24"
OPENAI_COMPUTER = {"type": "computer"}
#: pixels of an OpenAI scroll per wheel click
SCROLL_STEP_PX = 100


def _zoom_model(model: str) -> bool:
    import re

    match = re.search(r"claude-(opus|sonnet|haiku)-(\d+)-(\d+)", model)
    if match is None:
        return False
    family, version = match.group(1), (int(match.group(2)), int(match.group(3)))
    return version >= (4, 6) or (family == "opus" and version >= (4, 5))


def anthropic_computer(tools: list[ToolSpec], model: str) -> tuple[list[ToolSpec], dict[str, Any] | None]:
    """(the specs without ours, Anthropic's computer tool) when our `computer` is offered."""
    spec = next((t for t in tools if t.name == COMPUTER_NAME and t.display is not None), None)
    if spec is None or spec.display is None:
        return tools, None
    width, height = spec.display
    native: dict[str, Any] = {
        "type": COMPUTER_TYPE,
        "name": COMPUTER_NAME,
        "display_width_px": width,
        "display_height_px": height,
    }
    if _zoom_model(model):
        native.update(type=COMPUTER_ZOOM_TYPE, enable_zoom=True)
    return [t for t in tools if t.name != COMPUTER_NAME], native


def anthropic_beta(natives: list[dict[str, Any]]) -> str | None:
    """The `anthropic-beta` value the offered native tools need (the computer tool is a beta)."""
    types = {n.get("type") for n in natives}
    if COMPUTER_ZOOM_TYPE in types:
        return COMPUTER_ZOOM_BETA
    if COMPUTER_TYPE in types:
        return COMPUTER_BETA
    return None


def openai_computer(tools: list[ToolSpec]) -> tuple[list[ToolSpec], dict[str, Any] | None]:
    if any(t.name == COMPUTER_NAME for t in tools):
        return [t for t in tools if t.name != COMPUTER_NAME], dict(OPENAI_COMPUTER)
    return tools, None


def rewrite_openai_computer(item: dict[str, Any]) -> ToolCallBlock:
    """Our `computer` call for a `computer_call` item (batched `actions`, or the older single
    `action`), the item kept as native."""
    call_id = str(item.get("call_id") or item.get("id") or "")
    raw = item.get("actions")
    if not isinstance(raw, list):
        raw = [item["action"]] if isinstance(item.get("action"), dict) else []
    actions = [a for a in (_openai_action(r) for r in raw if isinstance(r, dict)) if a is not None]
    warnings = [
        str(c.get("message") or c.get("code") or c.get("id"))
        for c in item.get("pending_safety_checks") or []
        if isinstance(c, dict)
    ]
    arguments: dict[str, Any] = {"action": "screenshot"}
    if actions:
        arguments["actions"] = actions
    if warnings:
        arguments["warnings"] = warnings
    return ToolCallBlock(
        id=call_id, name=COMPUTER_NAME, arguments=arguments, native={"provider": "openai", "item": item}
    )


def _xy(action: dict[str, Any]) -> list[int]:
    return [int(action.get("x") or 0), int(action.get("y") or 0)]


def _openai_action(action: dict[str, Any]) -> dict[str, Any] | None:
    kind = action.get("type")
    if kind == "screenshot":
        return None  # the call ends with one anyway
    if kind == "click":
        button = action.get("button") or "left"
        if button in ("back", "forward"):
            return {"action": "key", "text": "XF86Back" if button == "back" else "XF86Forward"}
        name = {"left": "left_click", "right": "right_click", "wheel": "middle_click"}.get(
            button, "left_click"
        )
        return {"action": name, "coordinate": _xy(action)}
    if kind == "double_click":
        return {"action": "double_click", "coordinate": _xy(action)}
    if kind == "move":
        return {"action": "mouse_move", "coordinate": _xy(action)}
    if kind == "drag":
        path = [p for p in action.get("path") or [] if isinstance(p, dict)]
        if len(path) < 2:
            return {"action": "left_click_drag"}  # fails with "needs start_coordinate and coordinate"
        return {"action": "left_click_drag", "start_coordinate": _xy(path[0]), "coordinate": _xy(path[-1])}
    if kind == "scroll":
        sx, sy = int(action.get("scroll_x") or 0), int(action.get("scroll_y") or 0)
        vertical = abs(sy) >= abs(sx)
        amount = abs(sy if vertical else sx)
        direction = ("down" if sy > 0 else "up") if vertical else ("right" if sx > 0 else "left")
        return {
            "action": "scroll",
            "coordinate": _xy(action),
            "scroll_direction": direction,
            "scroll_amount": max(1, min(50, round(amount / SCROLL_STEP_PX))),
        }
    if kind == "type":
        return {"action": "type", "text": str(action.get("text") or "")}
    if kind == "keypress":
        keys = [str(k) for k in action.get("keys") or []]
        return {"action": "key", "text": "+".join(keys)}
    if kind == "wait":
        return {"action": "wait", "duration": 1.0}
    return {"action": str(kind)}  # not ours: the call fails validation with the action named


def openai_computer_input(item: dict[str, Any]) -> dict[str, Any]:
    """The `computer_call` item as it goes back in history."""
    keep = ("type", "id", "call_id", "actions", "action", "pending_safety_checks", "status")
    out = {k: item[k] for k in keep if k in item and item[k] is not None}
    out["status"] = "completed"
    return out


def openai_computer_output(item: dict[str, Any], call_id: str, image_url: str | None) -> dict[str, Any]:
    """The `computer_call_output` answering a call: the screenshot after its actions; the safety
    checks it carried are acknowledged (the gate showed them before the call ran)."""
    out: dict[str, Any] = {
        "type": "computer_call_output",
        "call_id": call_id,
        "output": {"type": "computer_screenshot", "image_url": image_url or ""},
    }
    checks = [c for c in item.get("pending_safety_checks") or [] if isinstance(c, dict)]
    if checks:
        out["acknowledged_safety_checks"] = checks
    return out
