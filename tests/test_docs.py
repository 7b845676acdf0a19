"""Keep docs/tools.md, policy.md, system-prompt.md and mcp.md true to the code.

Each test reads the Markdown, extracts what a page claims (tool names, argument names, TOML
snippets, example commands and their risk, `mermaid ...` command lines, preset names, the default
prompt) and checks it against the running code.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import ROOT, run_mermaid, say, write_script
from pydantic import BaseModel

from mermaid_cli.cli.main import cli
from mermaid_cli.config.loader import Settings
from mermaid_cli.config.sections.mcp import McpOAuthSettings, McpServerSettings
from mermaid_cli.config.sections.safety import Override
from mermaid_cli.integrations.mcp.deferred import LoadTool
from mermaid_cli.integrations.mcp.tools import ListMcpResources, ReadMcpResource, ToolSearch
from mermaid_cli.policy import list_presets
from mermaid_cli.policy.hooks import HookSpec
from mermaid_cli.policy.shell.classifier import classify_command
from mermaid_cli.run.prompt import build_system_prompt, safety_facts
from mermaid_cli.tools.agent import AgentTool
from mermaid_cli.tools.base import Tool
from mermaid_cli.tools.catalog_files import file_tools
from mermaid_cli.tools.catalog_longrun import longrun_tools
from mermaid_cli.tools.catalog_shell import shell_tools
from mermaid_cli.tools.render_image import RenderImage
from mermaid_cli.tools.web_fetch import WebFetch
from mermaid_cli.tools.web_search import WebSearch

DOCS = ROOT / "docs"
PAGES = ("tools.md", "policy.md", "system-prompt.md", "mcp.md")
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


@cache
def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def fenced(text: str, lang: str) -> list[tuple[int, str]]:
    """(offset, body) of every fenced block whose info string starts with `lang`."""
    return [(m.start(), m.group(2)) for m in FENCE.finditer(text) if m.group(1).strip().split(" ")[0] == lang]


def block_after(text: str, marker: str) -> str:
    """The body of the first fenced block after an HTML comment marker."""
    at = text.index(f"<!-- {marker} -->")
    m = FENCE.search(text, at)
    assert m is not None, f"no fenced block after {marker}"
    return m.group(2)


def table_between(text: str, marker: str) -> list[list[str]]:
    """Rows (cells, `\\|` unescaped) of the Markdown table between `<!-- m -->` and `<!-- /m -->`."""
    body = text[text.index(f"<!-- {marker} -->") : text.index(f"<!-- /{marker} -->")]
    rows = []
    for line in body.splitlines():
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip("|"))]
        rows.append(cells)
    return rows[1:]  # drop the header


def code(cell: str) -> str:
    m = re.fullmatch(r"`(.*)`", cell.strip())
    assert m, f"expected a code span, got {cell!r}"
    return m.group(1)


def table_rows(text: str, first_cell: str) -> dict[str, str]:
    """`| \\`name\\` | ... |` rows keyed by the first cell's code text."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\| `([^`]+)` \|(.*)$", line)
        if m:
            rows.setdefault(m.group(1), line)
    return rows


# --------------------------------------------------------------------------------------------
# Tools


def _offered_tools(project: Path, env: dict[str, str], *flags: str) -> list[str]:
    """`session_started.tools` of a real `mermaid exec --json` run whose model just says "ok"."""
    script = write_script(project / "ok.jsonl", [say("ok")])
    out = run_mermaid(["exec", "--json", *flags, "--model", f"replay/{script}", "say ok"], project, env=env)
    assert out.code == 0, out.stderr
    first = out.events[0]
    assert first["type"] == "session_started"
    return first["tools"]


def documented_tool_names() -> set[str]:
    return set(re.findall(r"`([a-z_]+(?:__[A-Za-z_]+__[A-Za-z_]+)?)`", page("tools.md")))


def test_every_tool_of_a_default_run_is_documented(project):
    tools = _offered_tools(project, {})
    assert "read_file" in tools and "execute_command" in tools
    missing = [t for t in tools if t not in documented_tool_names()]
    assert not missing, f"docs/tools.md does not mention {missing}"
    # the list the page shows for a default headless run is exactly what the run offers
    shown = block_after(page("tools.md"), "default-tools").split()
    assert shown == tools


def test_web_search_is_offered_with_a_backend_and_documented(project):
    tools = _offered_tools(project, {"BRAVE_API_KEY": "test-key-not-real"})
    assert "web_search" in tools
    assert set(tools) <= documented_tool_names()


def test_network_off_removes_web_tools_as_documented(project):
    tools = _offered_tools(project, {"BRAVE_API_KEY": "test-key-not-real"}, "--no-network")
    assert "web_fetch" not in tools and "web_search" not in tools
    assert "--no-network" in page("tools.md")


class _NoBackend:
    async def call_tool(self, *a: Any) -> Any: ...
    async def list_resources_text(self, *a: Any) -> Any: ...
    async def read_resource(self, *a: Any) -> Any: ...
    def search_deferred(self, *a: Any) -> list[Any]:
        return []


def all_builtin_tools() -> list[Tool]:
    backend = _NoBackend()
    return [
        *file_tools(),
        *shell_tools(),
        WebFetch(),
        WebSearch(backend=None),  # type: ignore[arg-type]
        *longrun_tools(interactive=True, memory_enabled=True),
        ToolSearch(backend),
        LoadTool(backend),  # type: ignore[arg-type]
        RenderImage(),
        ListMcpResources(backend),
        ReadMcpResource(backend),
        AgentTool(""),
    ]


def _fields(model: type[BaseModel]) -> set[str]:
    schema = model.model_json_schema()
    names = set(schema.get("properties", {}))
    for sub in schema.get("$defs", {}).values():
        names |= set(sub.get("properties", {}))
    return names


@pytest.mark.parametrize("tool", all_builtin_tools(), ids=lambda t: t.name)
def test_tool_row_lists_exact_arguments_and_category(tool):
    row = table_rows(page("tools.md"), tool.name).get(tool.name)
    assert row is not None, f"docs/tools.md has no table row for `{tool.name}`"
    assert f"`{tool.category}`" in row, f"{tool.name}: category {tool.category} not in {row}"
    for field in _fields(tool.Args):
        assert f"`{field}`" in row, f"{tool.name}: argument `{field}` missing from its row"
    # and no argument the code does not have: every code span after the category is a field,
    # a value of a Literal, or a documented config key/flag
    documented = set(re.findall(r"`([a-z_]+)`", row.split(f"`{tool.category}`", 1)[1]))
    allowed_values = set()
    for prop in tool.Args.model_json_schema().get("properties", {}).values():
        for option in [prop, *prop.get("anyOf", [])]:
            allowed_values |= {v for v in option.get("enum", []) if isinstance(v, str)}
    extra = (
        documented
        - _fields(tool.Args)
        - allowed_values
        - {"read", "edit", "shell", "process", "web", "mcp", "memory", "session"}
    )
    extra -= {"enabled", "false", "true"}
    assert not extra, f"{tool.name}: row mentions {extra}, which are not arguments"


def test_tool_sections_exist_for_tools_with_behaviour_notes():
    text = page("tools.md")
    for name in (
        "read_file",
        "write_file",
        "edit_file",
        "apply_patch",
        "delete_file",
        "create_directory",
        "glob",
        "grep",
        "execute_command",
        "background_process",
        "web_fetch",
        "web_search",
    ):
        assert f"### `{name}`" in text, name


# --------------------------------------------------------------------------------------------
# TOML snippets


def toml_snippets() -> list[tuple[str, int, str]]:
    out = []
    for name in PAGES:
        text = page(name)
        for offset, body in fenced(text, "toml"):
            out.append((name, text.count("\n", 0, offset) + 1, body))
    return out


def test_pages_have_toml_snippets():
    assert len(toml_snippets()) >= 12


@pytest.mark.parametrize("name,line,body", toml_snippets(), ids=lambda v: str(v)[:40])
def test_toml_snippet_parses_and_validates_as_config(name, line, body):
    data = tomllib.loads(body)
    Settings.model_validate(data)  # every snippet on these pages is a whole config file


@pytest.mark.parametrize("preset", list_presets())
def test_presets_are_valid_config(preset):
    data = tomllib.loads((ROOT / "policies" / f"{preset}.toml").read_text())
    Settings.model_validate(data)


# --------------------------------------------------------------------------------------------
# The shell classifier examples


def _lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.strip()]


def test_hard_deny_examples_are_hard_denied(tmp_path):
    commands = _lines(block_after(page("policy.md"), "hard-deny-examples"))
    assert len(commands) >= 30
    for command in commands:
        result = classify_command(command, project_root=tmp_path)
        assert result.hard_deny_rule is not None, f"not hard-denied: {command!r} ({result.risk})"
        assert result.risk == "destructive"


def test_not_hard_denied_examples_are_not(tmp_path):
    commands = _lines(block_after(page("policy.md"), "not-hard-denied-examples"))
    assert commands
    for command in commands:
        result = classify_command(command, project_root=tmp_path)
        assert result.hard_deny_rule is None, f"hard-denied after all: {command!r}"


def test_risk_examples_match_the_classifier():
    rows = table_between(page("policy.md"), "risk-examples")
    assert len(rows) >= 30
    for cells in rows:
        command, risk = code(cells[0]), code(cells[1])
        got = classify_command(command, project_root=Path("/work/proj"))
        assert got.risk == risk, f"{command!r}: documented {risk}, classifier says {got.risk} ({got.reason})"


def test_anchored_allow_example_holds(tmp_path):
    """The `allow git` table: only single simple commands whose program is git match."""
    from mermaid_cli.config.sections.safety import SafetySettings
    from mermaid_cli.policy.engine import evaluate
    from mermaid_cli.policy.requests import request_for_call

    policy = SafetySettings(overrides=[Override(tool="execute_command", pattern="git", decision="allow")])

    def decide(command: str) -> tuple[str, str]:
        request = request_for_call("execute_command", "shell", {"command": command}, project_root=tmp_path)
        out = evaluate(request, policy, interactive=False, allow_untrusted=False, project_root=tmp_path)
        return out.verdict, out.by

    assert decide("git status") == ("allow", "rule")
    assert decide('git commit -m "fix"') == ("allow", "rule")
    assert decide("git status; rm -rf x") == ("classify", "mode")
    assert decide("git log | sh")[1] != "rule"
    assert decide("./git status")[1] != "rule"
    assert decide("git reset --hard") == ("deny", "hard_deny")
    assert "`git status; rm -rf x`" in page("policy.md")


# --------------------------------------------------------------------------------------------
# Command lines


@cache
def help_text(path: tuple[str, ...]) -> str | None:
    result = CliRunner().invoke(cli, [*path, "--help"])
    return result.output if result.exit_code == 0 else None


def _commands_in(line: str) -> list[list[str]]:
    """The simple commands of one shell line, as token lists (operators split them)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as exc:
        raise AssertionError(f"unparseable shell line: {line!r}: {exc}") from None
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token and set(token) <= set("|&;<>()"):
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def mermaid_command_lines() -> list[tuple[str, str]]:
    out = []
    for name in PAGES:
        for _offset, body in fenced(page(name), "sh"):
            joined = re.sub(r"\\\n\s*", " ", body)
            for line in joined.splitlines():
                if "mermaid " in line:
                    out.append((name, line.strip()))
    return out


def test_pages_have_mermaid_command_lines():
    assert len(mermaid_command_lines()) >= 15


@pytest.mark.parametrize("name,line", mermaid_command_lines(), ids=lambda v: str(v)[:60])
def test_mermaid_command_lines_use_real_subcommands_and_flags(name, line):
    found = False
    for tokens in _commands_in(line):
        if tokens[0] != "mermaid":
            continue
        found = True
        path: list[str] = []
        rest = tokens[1:]
        while rest and not rest[0].startswith("-") and help_text((*path, rest[0])) is not None:
            sub = help_text(tuple(path))
            if sub is None or not re.search(rf"^\s+{re.escape(rest[0])}\b", sub, re.MULTILINE):
                break
            path.append(rest.pop(0))
        assert path, f"{line!r}: no mermaid subcommand"
        text = help_text(tuple(path))
        assert text is not None
        for token in rest:
            if token == "--":
                break  # what follows belongs to another program (mcp add NAME -- CMD ...)
            if token.startswith("-") and token != "-":
                flag = token.split("=", 1)[0]
                assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text), (
                    f"{line!r}: `mermaid {' '.join(path)} --help` does not list {flag}"
                )
    assert found, line


# --------------------------------------------------------------------------------------------
# Presets


def test_preset_names_mentioned_exist():
    presets = set(list_presets())
    assert {"ci-fix", "read-only-review", "untrusted-input"} <= presets
    for name in PAGES:
        for mentioned in re.findall(r"--policy[ =]([A-Za-z0-9_.\-/]+)", page(name)):
            if "/" in mentioned or mentioned.endswith(".toml") or mentioned.isupper():
                continue
            assert mentioned in presets, f"{name}: --policy {mentioned} is not in policies/"


def test_preset_table_matches_policies_dir():
    text = page("policy.md")
    section = text[text.index("| preset | mode |") :].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \|", section, re.MULTILINE)
    assert {name for name, _mode in rows} == set(list_presets())
    for name, mode in rows:
        data = tomllib.loads((ROOT / "policies" / f"{name}.toml").read_text())
        assert data["safety"]["mode"] == mode, name


# --------------------------------------------------------------------------------------------
# Config key tables


def _key_table(text: str, header: str) -> set[str]:
    section = text[text.index(header) :].split("\n\n", 1)[0]
    return set(re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE))


def test_mcp_server_keys_table_matches_settings():
    keys = _key_table(page("mcp.md"), "| key | default | meaning |")
    assert keys == set(McpServerSettings.model_fields)
    for field in McpOAuthSettings.model_fields:
        assert f"`{field}`" in page("mcp.md"), field


def test_override_fields_table_matches_settings():
    assert _key_table(page("policy.md"), "| field | meaning |\n|---|---|\n| `tool`") == set(
        Override.model_fields
    )


def test_hook_fields_table_matches_settings():
    assert _key_table(page("policy.md"), "| field | meaning |\n|---|---|\n| `command`") == set(
        HookSpec.model_fields
    )


# --------------------------------------------------------------------------------------------
# The system prompt


def test_default_prompt_shown_is_what_build_system_prompt_gives():
    shown = block_after(page("system-prompt.md"), "default-prompt")
    tools = block_after(page("tools.md"), "default-tools").split()
    built = build_system_prompt(
        tools=tools,
        safety_mode="auto",
        project_root="/home/runner/work/app/app",
        instructions="## AGENTS.md\n\nRun tests with `pytest -q`.",
        memory_index=(
            "Saved facts (read one with the memory tool, action search):\n"
            "- [project] test-command: how to run the tests"
        ),
        interactive=False,
        os_name="Linux",
    )
    assert shown == built


@pytest.mark.parametrize("mode", ["read_only", "ask", "auto", "full_access"])
def test_safety_sentence_table_matches_prompts(mode):
    row = table_rows(page("system-prompt.md"), mode)[mode]
    assert safety_facts(mode, interactive=True)[0] in row


def test_instruction_cap_and_files_match_the_code():
    from mermaid_cli.run.instructions import MAX_INSTRUCTION_BYTES, PROJECT_FILES, TRUNCATED_MARKER
    from mermaid_cli.tools.memory import INDEX_TRUNCATED

    text = page("system-prompt.md")
    assert f"{MAX_INSTRUCTION_BYTES:,} bytes" in text
    assert TRUNCATED_MARKER in text
    assert " ".join(INDEX_TRUNCATED.split()) in " ".join(text.split())
    for name in PROJECT_FILES:
        assert f"| `{name}` | the project root |" in text


# --------------------------------------------------------------------------------------------
# Links between the pages


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(name: str) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page(name), flags=re.MULTILINE | re.DOTALL)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)}


@pytest.mark.parametrize("name", PAGES)
def test_links_to_docs_pages_and_anchors_resolve(name):
    for target, anchor in re.findall(r"\]\(([\w.\-]*\.md|)(?:#([\w\-]+))?\)", page(name)):
        target_page = target or name
        assert (DOCS / target_page).is_file(), f"{name}: link to missing {target_page}"
        if anchor and target_page in PAGES:
            assert anchor in _anchors(target_page), f"{name}: no heading #{anchor} in {target_page}"


def _settings_key_exists(section: str, key: str) -> bool:
    model: Any = Settings
    for part in [*section.split("."), key]:
        fields = getattr(model, "model_fields", None)
        if fields is None or part not in fields:
            return False
        annotation = fields[part].annotation
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    return True


CONFIG_KEY_MENTION = re.compile(r"`\[([a-z_]+(?:\.[a-z_]+)*)\] ([a-z_]+)")


@pytest.mark.parametrize("name", sorted(p.name for p in DOCS.glob("*.md")) + ["../README.md"])
def test_config_keys_named_in_docs_exist(name):
    # docs/exit-codes.md once named `[run] fail_on_tool_error`; the key is `[exec] fail_on_tool_error`
    text = (DOCS / name).read_text()
    wrong = [
        f"[{section}] {key}"
        for section, key in CONFIG_KEY_MENTION.findall(text)
        if not _settings_key_exists(section, key)
    ]
    assert not wrong, f"{name} names config keys that do not exist: {wrong}"
