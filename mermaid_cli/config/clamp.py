"""The project layer may only tighten (DESIGN.md §5): what `load_settings` strips from
`<git root>/.mermaid/config.toml` before merging it.

A project file is committed with the code, possibly by an untrusted pull request, so it may not
configure providers, servers, web trust, hooks or verify commands (they all run or trust
something), may not loosen safety or the kernel sandbox, may not pass more environment to
commands, and may move every numeric limit or budget only downward relative to the layers under
it. Whatever it tried is dropped with a warning naming the key.
"""

from __future__ import annotations

from typing import Any

from mermaid_cli.config.layers import copy_tree, toml_value

SAFETY_MODES = ("read_only", "ask", "auto", "full_access")  # strictest first
FLOOR_LEVELS = ("allow", "auto", "ask", "deny")  # loosest first
SANDBOX_MODES = ("off", "best-effort", "auto", "on")  # loosest first

#: switches a project file may set only to their stricter value (the other one is dropped)
STRICTER_ONLY: dict[tuple[str, str], bool] = {
    ("safety", "checkpoint_on_mutation"): True,
    ("exec", "fail_on_tool_error"): True,
    ("memory", "enabled"): False,
    ("tools", "provider_native"): False,
    ("tools", "computer"): False,
}
#: lists a project file adds to, never replaces: the rules and denials of the layers under it
#: stay (a project's `safety.overrides` come after the user's: the first match decides, so they
#: only reach what the user's rules leave open)
ADDED_TO: tuple[tuple[str, str], ...] = (
    ("safety", "overrides"),
    ("agents", "deny_tools"),
    ("agents", "deny_servers"),
    ("tools", "disabled"),
)

# Keys a project file (committed with the code, possibly by an untrusted PR) may not set.
PROJECT_FORBIDDEN = ("providers", "mcp_servers", "web", "pricing", "models", "model", "hooks", "plugins")
PROJECT_FORBIDDEN_SAFETY = ("allow_readonly_web", "allow_untrusted_headless_tools", "auto_classifier_model")


def clamp_project(
    data: dict[str, Any],
    current_mode: Any,
    source: str,
    warnings: list[str],
    current_floors: dict[str, str],
    below: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A copy of the project layer `data` with everything that would loosen removed (a warning
    each). `current_mode` and `current_floors` are the safety mode and floors of the layers under
    it; `below` their effective values, against which numbers may only go down."""
    data = copy_tree(data)
    _clamp_top_level(data, source, warnings)
    _clamp_switches(data, source, warnings)
    safety = data.get("safety")
    if isinstance(safety, dict):
        _clamp_safety(safety, current_mode, current_floors, source, warnings)
    _clamp_children(data, below, source, warnings)
    _clamp_agent_types(data, below, source, warnings)
    if below is not None:
        _clamp_numbers(data, below, (), source, warnings)
        _narrow_tool_filters(data, below)
        _add_to_lists_below(data, below)
    return data


def _clamp_top_level(data: dict[str, Any], source: str, warnings: list[str]) -> None:
    """Tables that run or trust something: providers, servers, hooks, verify commands, the computer."""
    for key in PROJECT_FORBIDDEN:
        if key in data:
            del data[key]
            warnings.append(f"{source}: `{key}` is ignored in a project config (set it in your user config)")
    _drop(
        data,
        "verify",
        "commands",
        source,
        warnings,
        "commands it names would run; pass --verify or set it in your user config",
    )
    tools = data.get("tools")
    if isinstance(tools, dict) and "categories" in tools:
        del tools["categories"]  # a pull request must not move execute_command to `read`
        warnings.append(
            f"{source}: `tools.categories` is ignored in a project config (set it in your user config)"
        )


def _clamp_safety(
    safety: dict[str, Any],
    current_mode: Any,
    current_floors: dict[str, str],
    source: str,
    warnings: list[str],
) -> None:
    """`[safety]`: no trust switches, no looser mode, no allow rules, no lower floors."""
    for key in PROJECT_FORBIDDEN_SAFETY:
        if key in safety:
            del safety[key]
            warnings.append(f"{source}: `safety.{key}` is ignored in a project config")
    mode = safety.get("mode")
    if mode is not None and mode in SAFETY_MODES and _safety_rank(mode) > _safety_rank(current_mode):
        del safety["mode"]
        warnings.append(
            f"{source}: safety.mode = {mode!r} would loosen {current_mode!r}; a project config may only tighten it"
        )
    rules = safety.get("overrides")
    if isinstance(rules, list):
        kept = [r for r in rules if not (isinstance(r, dict) and r.get("decision") == "allow")]
        if len(kept) != len(rules):
            warnings.append(f"{source}: `allow` overrides are ignored in a project config")
            safety["overrides"] = kept
    for key, loose in (("network", "allow"), ("filesystem", "unrestricted")):
        if safety.get(key) == loose:
            del safety[key]
            warnings.append(
                f"{source}: safety.{key} = {loose!r} is ignored in a project config (it would loosen)"
            )
    for key in ("external_writes", "system_installs"):  # floors: only raised, never lowered
        level = safety.get(key)
        if level in FLOOR_LEVELS and FLOOR_LEVELS.index(level) < FLOOR_LEVELS.index(current_floors[key]):
            del safety[key]
            warnings.append(
                f"{source}: safety.{key} = {level!r} would lower the floor; a project config may only raise it"
            )


def _clamp_switches(data: dict[str, Any], source: str, warnings: list[str]) -> None:
    """`STRICTER_ONLY`: a switch set to its looser value is dropped (the computer tool's
    screenshots, memory, provider-native tools on; checkpoints, failing on tool errors off)."""
    for (table, key), stricter in STRICTER_ONLY.items():
        section = data.get(table)
        if isinstance(section, dict) and key in section and section[key] is not stricter:
            value = section.pop(key)
            warnings.append(
                f"{source}: `{table}.{key} = {toml_value(value)}` is ignored in a project config (it would loosen)"
            )


def _clamp_children(
    data: dict[str, Any], below: dict[str, Any] | None, source: str, warnings: list[str]
) -> None:
    """What child processes get: the kernel sandbox no weaker and no wider, no extra environment."""
    sandbox = data.get("sandbox")
    if isinstance(sandbox, dict):  # a pull request must not switch the kernel sandbox off or widen it
        under = below.get("sandbox") if below is not None else None
        floors = ["auto", under.get("mode") if isinstance(under, dict) else None]  # never below `auto`
        floor = max(SANDBOX_MODES.index(m) for m in floors if m in SANDBOX_MODES)
        mode = sandbox.get("mode")
        if mode in SANDBOX_MODES and SANDBOX_MODES.index(mode) < floor:
            warnings.append(
                f"{source}: sandbox.mode = {sandbox.pop('mode')!r} is ignored in a project config (it would loosen)"
            )
        for key in ("writable_roots", "readable_roots"):
            if key in sandbox:
                del sandbox[key]
                warnings.append(f"{source}: `sandbox.{key}` is ignored in a project config")
    _drop(data, "exec", "env_allow", source, warnings, "it could pass secrets to commands")


def _clamp_agent_types(
    data: dict[str, Any], below: dict[str, Any] | None, source: str, warnings: list[str]
) -> None:
    """`[agents.types.NAME]`: a project may add a type, not redefine one the user made (its ceiling,
    tools), nor pick a type's model (top-level `model` is not a project key either)."""
    agents = data.get("agents")
    types = agents.get("types") if isinstance(agents, dict) else None
    if not isinstance(types, dict):
        return
    under = below.get("agents") if below is not None else None
    theirs = under.get("types") if isinstance(under, dict) else None
    for name in list(types):
        if isinstance(theirs, dict) and name in theirs:
            del types[name]
            warnings.append(
                f"{source}: `agents.types.{name}` is ignored in a project config (your config defines it)"
            )
        elif isinstance(types[name], dict) and "model" in types[name]:
            del types[name]["model"]
            warnings.append(f"{source}: `agents.types.{name}.model` is ignored in a project config")


def _add_to_lists_below(data: dict[str, Any], below: dict[str, Any]) -> None:
    """`ADDED_TO`: the project's entries follow the ones under it instead of replacing them."""
    for table, key in ADDED_TO:
        section, under = data.get(table), below.get(table)
        if not isinstance(section, dict) or not isinstance(under, dict):
            continue
        mine, theirs = section.get(key), under.get(key)
        if isinstance(mine, list) and isinstance(theirs, list):
            section[key] = [*theirs, *(x for x in mine if x not in theirs)]


def _drop(data: dict[str, Any], table: str, key: str, source: str, warnings: list[str], why: str) -> None:
    """Remove `table.key` from the project layer, warning with `why`."""
    section = data.get(table)
    if isinstance(section, dict) and key in section:
        del section[key]
        warnings.append(f"{source}: `{table}.{key}` is ignored in a project config ({why})")


def _clamp_numbers(
    data: dict[str, Any], below: dict[str, Any], at: tuple[str, ...], source: str, warnings: list[str]
) -> None:
    """Drop every number in the project layer that is above the value beneath it. A lower layer's
    None (no limit, or not set) is looser than any number, so a number there is a tightening."""
    for key in list(data):
        value = data[key]
        base = below.get(key) if isinstance(below, dict) else None
        dotted = ".".join((*at, key))
        if isinstance(value, dict):
            _clamp_numbers(value, base if isinstance(base, dict) else {}, (*at, key), source, warnings)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            if isinstance(base, int | float) and not isinstance(base, bool) and value > base:
                del data[key]
                warnings.append(
                    f"{source}: `{dotted}` = {value} would raise {base}; a project config may only lower limits"
                )


def _safety_rank(mode: Any) -> int:
    return SAFETY_MODES.index(mode) if mode in SAFETY_MODES else len(SAFETY_MODES)


def _narrow_tool_filters(data: dict[str, Any], below: dict[str, Any]) -> None:
    """A project's `[tools] enabled` keeps only what the user's `enabled` (if any) allows (its
    `disabled` adds to the user's: `ADDED_TO`): a pull request can offer fewer tools, never bring
    back one the user switched off."""
    tools, under = data.get("tools"), below.get("tools")
    if not isinstance(tools, dict) or not isinstance(under, dict):
        return
    if isinstance(tools.get("enabled"), list) and isinstance(under.get("enabled"), list):
        tools["enabled"] = [x for x in tools["enabled"] if x in under["enabled"]]
