"""`mermaid exec --mcp-prompt SERVER/PROMPT [ARG…]`: a server prompt's text used as the task.

Arguments map positionally onto the prompt's declared arguments; the last declared argument takes
the rest of the words. A missing required argument is a usage error (exit 2) with a usage line."""

from __future__ import annotations

from typing import Any

from mermaid_cli.core.errors import UsageError
from mermaid_cli.integrations.mcp.tools import convert_blocks


def parse_spec(spec: str) -> tuple[str, str]:
    server, sep, prompt = spec.partition("/")
    if not sep or not server or not prompt:
        raise UsageError(f"--mcp-prompt expects SERVER/PROMPT, got {spec!r}")
    return server, prompt


def usage_line(server: str, prompt: Any) -> str:
    parts = [f"usage: mermaid exec --mcp-prompt {server}/{prompt.name}"]
    for arg in prompt.arguments or []:
        word = arg.name.upper()
        parts.append(word if arg.required else f"[{word}]")
    return " ".join(parts)


def map_arguments(server: str, prompt: Any, words: list[str]) -> dict[str, str]:
    declared = list(prompt.arguments or [])
    if words and not declared:
        raise UsageError(f"prompt {server}/{prompt.name} takes no arguments\n{usage_line(server, prompt)}")
    values: dict[str, str] = {}
    for i, arg in enumerate(declared):
        if i >= len(words):
            break
        # the last declared argument takes the rest of the words
        values[arg.name] = " ".join(words[i:]) if i == len(declared) - 1 else words[i]
    missing = [a.name for a in declared if a.required and a.name not in values]
    if missing:
        raise UsageError(
            f"prompt {server}/{prompt.name} needs argument {', '.join(repr(m) for m in missing)}\n"
            f"{usage_line(server, prompt)}"
        )
    return values


async def fetch_prompt(manager: Any, spec: str, words: list[str]) -> str:
    """The prompt's text. `manager` is a started `McpManager` (the server must be ready)."""
    server, name = parse_spec(spec)
    prompts = manager.prompts(server)
    if prompts is None:
        status = {s.name: s for s in manager.statuses()}.get(server)
        if status is None:
            raise UsageError(f"--mcp-prompt: no MCP server named {server!r}")
        raise UsageError(
            f"--mcp-prompt: MCP server {server!r} is not available: {status.error or status.state}"
        )
    prompt = next((p for p in prompts if p.name == name), None)
    if prompt is None:
        known = ", ".join(p.name for p in prompts) or "none"
        raise UsageError(f"--mcp-prompt: server {server!r} has no prompt {name!r}; prompts: {known}")
    arguments = map_arguments(server, prompt, words)
    result = await manager.get_prompt(server, name, arguments)
    texts: list[str] = []
    for message in result.messages:
        content = message.content
        parts, _images = convert_blocks(content if isinstance(content, list) else [content])
        texts.extend(p for p in parts if p)
    text = "\n\n".join(texts).strip()
    if not text:
        raise UsageError(f"--mcp-prompt: prompt {server}/{name} produced no text")
    return text
