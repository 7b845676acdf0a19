"""`mermaid exec`'s arguments read without click, for the common invocation (issue 23).

click and the command tree cost ~3.5% of a 3-turn run's instructions (~10 ms here) before the
run can start. `cli/main.py` stays the one definition of the flags; `PARAMS` restates them and
a test holds it equal to the click command, and a property test holds `parse` to what click
makes of the same arguments. `parse` takes only what it reads exactly as click does and returns
None for everything else (help, `--sandbox`, `-p`, `--`, a bare `-`, short-flag clusters, an
unknown flag, a value that starts with `-` or fails its type, `--json` with `--format`), so that
click still parses, and reports, every invocation the fast path does not take. Stdlib only.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

Kind = Literal["flag", "text", "many", "choice", "int", "float"]


class Param(NamedTuple):
    """One exec parameter as click defines it: its keyword, its spellings, what it takes."""

    name: str
    opts: tuple[str, ...]
    kind: Kind
    #: the allowed values of a choice
    choices: tuple[str, ...] = ()
    #: the bounds of a number: (minimum, open minimum, maximum)
    low: float | None = None
    low_open: bool = False
    high: float | None = None


PARAMS: tuple[Param, ...] = (
    Param("json_flag", ("--json",), "flag"),
    Param(
        "output_format",
        ("-f", "--format", "--output-format"),
        "choice",
        ("text", "json", "jsonl", "markdown", "ndjson", "stream-json"),
    ),
    Param("model", ("-m", "--model"), "text"),
    Param("max_turns", ("--max-turns",), "int", low=1),
    Param("max_tokens", ("--max-tokens",), "int", low=1),
    Param("max_cost", ("--max-cost",), "float", low=0, low_open=True),
    Param("timeout", ("--timeout",), "float", low=0, low_open=True),
    Param("resume", ("--resume",), "text"),
    Param("continue_", ("--continue",), "flag"),
    Param("record", ("--record",), "text"),
    Param("config_overrides", ("-c", "--config"), "many"),
    Param("profile", ("--profile",), "text"),
    Param("path", ("--path",), "text"),
    Param("system_prompt", ("--system-prompt",), "text"),
    Param("system_prompt_file", ("--system-prompt-file",), "text"),
    Param("append_system_prompt", ("--append-system-prompt",), "text"),
    Param("append_system_prompt_file", ("--append-system-prompt-file",), "text"),
    Param("output_last_message", ("-o", "--output-last-message"), "text"),
    Param("ephemeral", ("--ephemeral",), "flag"),
    Param("safety", ("--safety",), "choice", ("read_only", "ask", "auto", "full_access")),
    Param("policy", ("--policy",), "text"),
    Param("allow_untrusted_tools", ("--allow-untrusted-tools",), "flag"),
    Param("allowed_tools", ("--allowed-tools", "--allowedTools"), "many"),
    Param("disallowed_tools", ("--disallowed-tools", "--disallowedTools"), "many"),
    Param("add_dirs", ("--add-dir",), "many"),
    Param("no_interactive", ("--no-interactive",), "flag"),
    Param("plain", ("--plain",), "flag"),
    Param("no_network", ("--no-network",), "flag"),
    Param("confine_fs", ("--confine-fs",), "flag"),
    Param("reasoning", ("--reasoning",), "choice", ("none", "low", "medium", "high")),
    Param("masks", ("--mask",), "many"),
    Param("quiet", ("-q", "--quiet"), "flag"),
    Param("output_schema", ("--output-schema",), "text"),
    Param("verify", ("--verify",), "many"),
    Param("verify_attempts", ("--verify-attempts",), "int", low=0, high=20),
    Param("diff_out", ("--diff-out",), "text"),
    Param("mcp_prompt", ("--mcp-prompt",), "text"),
)
#: parameters the fast path leaves to click: an optional value (`--sandbox`, `--sandbox=off`),
#: or a refusal with its own message (`-p`)
CLICK_ONLY: dict[str, tuple[str, ...]] = {"sandbox": ("--sandbox",), "rejected_p": ("-p",)}

_BY_OPT = {opt: param for param in PARAMS for opt in param.opts}
_DEFAULTS: dict[str, Any] = {
    p.name: False if p.kind == "flag" else () if p.kind == "many" else None for p in PARAMS
}


def parse(argv: list[str]) -> dict[str, Any] | None:
    """The keyword arguments click would pass `exec` for `argv` (which starts with "exec"), or
    None when the fast path does not take it."""
    if not argv or argv[0] != "exec":
        return None
    values: dict[str, Any] = {}
    many: dict[str, list[str]] = {}
    words: list[str] = []
    tokens = iter(argv[1:])
    for token in tokens:
        if not token.startswith("-"):
            words.append(token)
            continue
        name, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        param = _BY_OPT.get(name)
        if param is None:
            return None  # "-", "--", help, a cluster, an unknown or click-only flag: click's to read
        if param.kind == "flag":
            if eq:
                return None
            values[param.name] = True
            continue
        if not eq:
            following = next(tokens, None)
            if following is None:
                return None
            value = following
        if value.startswith("-"):
            return None
        if param.kind == "many":
            many.setdefault(param.name, []).append(value)
            continue
        converted = _convert(param, value)
        if converted is None:
            return None
        values[param.name] = converted  # a repeated option: the last one counts, as in click
    if values.get("json_flag") and values.get("output_format") is not None:
        return None  # `options_from_params` judges that pair and click reports a conflict
    out = dict(_DEFAULTS)
    out.update(values)
    out.update({name: tuple(items) for name, items in many.items()})
    out["prompt"] = tuple(words)
    out["sandbox"] = None
    return out


def _convert(param: Param, value: str) -> object | None:
    if param.kind == "text":
        return value
    if param.kind == "choice":
        return value if value in param.choices else None
    number: float
    try:
        number = int(value) if param.kind == "int" else float(value)
    except ValueError:
        return None
    # click's range check, comparisons included (a NaN passes it there too)
    if param.low is not None and (number <= param.low if param.low_open else number < param.low):
        return None
    if param.high is not None and number > param.high:
        return None
    return number
