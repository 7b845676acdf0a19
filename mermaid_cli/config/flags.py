"""`--allowed-tools` / `--disallowed-tools`: peer-style tool rules as `[[safety.overrides]]` rules.

Owned here: parsing the flags' spellings (`read_file`, `execute_command(git *)`, and the names
users bring from `claude -p`: `Bash(git diff:*)`, `Read`, `Edit`…) into `Override` rules, and the
one place they join the rule list (`apply_tool_rules`, called by the loader after every layer).

The layer only narrows what the config says, it never replaces it: `-c safety.overrides=[…]`,
a `--policy` preset or a profile may replace the array below it, but the flag rules are added
after all of them, around the merged list —

    [--disallowed-tools denies] + [every config rule, in its order] + [--allowed-tools allows]

so a disallowed tool is denied whatever any config layer allows (first match wins), and an
allowed one is pre-approved only where no config rule (deny, ask or allow) already decides; it
still cannot lift hard denies, the network kill switch, the read_only ceiling or the floors,
which the engine applies around the rules.

Patterns follow the `[[safety.overrides]]` `pattern` semantics: for `execute_command` (and
`background_process`) the words before an optional trailing `*`/`:*` are the program and its
first arguments for an allow (one simple command only) and a substring for a deny; for other
tools the text is the exact path or host for an allow, a substring for a deny. Anything the rule
language cannot say (a `*` in the middle) is a usage error, never a looser rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mermaid_cli.core.errors import ConfigError

#: the built-in tools' names (tests pin this against the registry; MCP tools are `mcp__…`)
KNOWN_TOOLS = frozenset(
    {
        "read_file", "write_file", "edit_file", "apply_patch", "delete_file", "create_directory",
        "execute_command", "background_process", "memory", "agent", "task_create", "task_update",
        "task_list", "ask_user_question", "context_archive", "compact_context", "web_search",
        "web_fetch", "glob", "grep", "computer", "tool_search", "load_tool", "list_mcp_resources",
        "read_mcp_resource", "context_check", "scratchpad_read", "scratchpad_save_file",
        "render_image", "skill", "skill_search",
    }
)  # fmt: skip

#: peers' tool names (Claude Code's, plus `Shell`) -> ours
PEER_TOOL_NAMES: dict[str, tuple[str, ...]] = {
    "Bash": ("execute_command",),
    "Shell": ("execute_command",),
    "Read": ("read_file",),
    "Write": ("write_file",),
    "Edit": ("edit_file", "apply_patch"),
    "MultiEdit": ("edit_file", "apply_patch"),
    "Glob": ("glob",),
    "Grep": ("grep",),
    "LS": ("glob",),
    "WebFetch": ("web_fetch",),
    "WebSearch": ("web_search",),
    "Task": ("agent",),
    "Agent": ("agent",),
    "TodoWrite": ("task_create", "task_update"),
}

_COMMAND_TOOLS = frozenset({"execute_command", "background_process"})
_GLOB = set("*?[")


@dataclass(frozen=True)
class ToolRules:
    """The two flags' raw values, as given (each value may hold several comma-separated specs)."""

    allowed: tuple[str, ...] = ()
    disallowed: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.allowed or self.disallowed)


def split_specs(values: Sequence[str]) -> list[str]:
    """`"Read,Bash(git log:*)" "Edit"` -> ["Read", "Bash(git log:*)", "Edit"]: commas and spaces
    separate specs, except inside parentheses (a pattern may hold both)."""
    out: list[str] = []
    for value in values:
        depth, cur = 0, ""
        for ch in value:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth = max(depth - 1, 0)
            if depth == 0 and (ch == "," or ch.isspace()):
                if cur:
                    out.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            out.append(cur)
    return out


def _tools_for(name: str, flag: str) -> tuple[str, ...]:
    if name in PEER_TOOL_NAMES:
        return PEER_TOOL_NAMES[name]
    if name in KNOWN_TOOLS or name.startswith("mcp__") or _GLOB & set(name):
        return (name,)
    known = ", ".join(sorted(KNOWN_TOOLS))
    raise ConfigError(f"unknown tool {name!r} (tools: {known}; MCP tools are mcp__SERVER__TOOL)", source=flag)


def _pattern_for(tools: tuple[str, ...], raw: str, spec: str, flag: str) -> str | None:
    text = raw.strip()
    if tools[0] in _COMMAND_TOOLS:
        for tail in (":*", "*"):
            if text.endswith(tail):
                text = text[: -len(tail)].rstrip()
                break
    if _GLOB & set(text):
        raise ConfigError(
            f"{spec!r}: only a trailing `*` is supported in a tool pattern "
            "(for finer rules write [[safety.overrides]] in the config)",
            source=flag,
        )
    return text or None


def parse_spec(spec: str, decision: str, flag: str) -> list[dict[str, Any]]:
    """One `NAME` or `NAME(PATTERN)` -> its override rules (as config data, validated later)."""
    name, paren, rest = spec.partition("(")
    name = name.strip()
    if not name or (paren and not rest.endswith(")")):
        raise ConfigError(f"bad tool spec {spec!r}: expected NAME or NAME(PATTERN)", source=flag)
    tools = _tools_for(name, flag)
    pattern = _pattern_for(tools, rest[:-1], spec, flag) if paren else None
    reason = f"{'allowed' if decision == 'allow' else 'denied'} by {flag} {spec}"
    rules: list[dict[str, Any]] = []
    for tool in tools:
        rule: dict[str, Any] = {"tool": tool, "decision": decision, "reason": reason}
        if pattern is not None:
            rule["pattern"] = pattern
        rules.append(rule)
    return rules


def apply_tool_rules(merged: dict[str, Any], rules: ToolRules, sources: dict[str, str]) -> None:
    """Put the flag rules around `merged`'s `safety.overrides` (denies first, allows last)."""
    if not rules:
        return
    denies = [r for s in split_specs(rules.disallowed) for r in parse_spec(s, "deny", "--disallowed-tools")]
    allows = [r for s in split_specs(rules.allowed) for r in parse_spec(s, "allow", "--allowed-tools")]
    safety = merged.setdefault("safety", {})
    if not isinstance(safety, dict):
        return  # validation reports the bad [safety] value with its source
    existing = safety.get("overrides", [])
    if not isinstance(existing, list):
        return  # likewise: not an array of rules
    safety["overrides"] = [*denies, *existing, *allows]
    below = sources.get("safety.overrides")
    sources["safety.overrides"] = f"{below} + flags" if below else "flags --allowed-tools/--disallowed-tools"
