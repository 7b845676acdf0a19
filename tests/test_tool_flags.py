"""`--allowed-tools` / `--disallowed-tools` (config/flags.py): peer-style tool rules that only
narrow the config's `[[safety.overrides]]` — a disallowed tool is denied whatever a config layer
allows, `-c safety.overrides=…` cannot remove a flag's deny, and an allowed call is pre-approved
only where no config rule decides."""

from __future__ import annotations

import re

import pytest
from conftest import call, run_inprocess, say, write_script

from mermaid_cli.config.flags import KNOWN_TOOLS, ToolRules, parse_spec, split_specs
from mermaid_cli.config.loader import Settings, load_settings
from mermaid_cli.core.errors import ConfigError


def _load(project, *, allowed=(), disallowed=(), overrides=(), user: str | None = None, env=None):
    if user is not None:
        cfg = project.parent / "home-config"
        cfg.mkdir(exist_ok=True)
        (cfg / "config.toml").write_text(user)
        env = {"MERMAID_CONFIG_DIR": str(cfg)}
    return load_settings(
        project_root=project,
        env=env or {"MERMAID_CONFIG_DIR": str(project.parent / "none")},
        overrides=list(overrides),
        tool_rules=ToolRules(tuple(allowed), tuple(disallowed)),
    )


USER_RULES = """
[[safety.overrides]]
tool = "execute_command"
pattern = "rm"
decision = "deny"
reason = "user: no rm"

[[safety.overrides]]
tool = "web_fetch"
decision = "allow"
"""


def test_denies_go_first_config_rules_keep_their_order_allows_go_last(project):
    loaded = _load(project, allowed=["read_file"], disallowed=["web_fetch"], user=USER_RULES)
    rules = [(r.tool, r.pattern, r.decision) for r in loaded.settings.safety.overrides]
    assert rules == [
        ("web_fetch", None, "deny"),
        ("execute_command", "rm", "deny"),
        ("web_fetch", None, "allow"),
        ("read_file", None, "allow"),
    ]
    assert "flags" in loaded.sources["safety.overrides"]


def test_c_overrides_replace_the_config_array_but_never_the_flag_denies(project):
    loaded = _load(
        project,
        disallowed=["Bash(git push:*)"],
        overrides=['safety.overrides=[{tool="execute_command", decision="allow"}]'],
        user=USER_RULES,
    )
    first = loaded.settings.safety.overrides[0]
    assert (first.tool, first.pattern, first.decision) == ("execute_command", "git push", "deny")


@pytest.mark.parametrize(
    ("spec", "decision", "expected"),
    [
        ("read_file", "allow", [("read_file", None)]),
        ("execute_command(git *)", "allow", [("execute_command", "git")]),
        ("Bash(git diff:*)", "allow", [("execute_command", "git diff")]),
        ("Shell(npm test)", "deny", [("execute_command", "npm test")]),
        ("Bash(*)", "deny", [("execute_command", None)]),
        ("Edit", "deny", [("edit_file", None), ("apply_patch", None)]),
        ("mcp__github__*", "deny", [("mcp__github__*", None)]),
        ("web_fetch(docs.python.org)", "allow", [("web_fetch", "docs.python.org")]),
    ],
)
def test_spellings(spec, decision, expected):
    rules = parse_spec(spec, decision, "--allowed-tools")
    assert [(r["tool"], r.get("pattern")) for r in rules] == expected
    assert all(r["decision"] == decision for r in rules)


def test_specs_split_on_commas_and_spaces_outside_parentheses():
    assert split_specs(["Read,Bash(git log:*) Edit", "execute_command(git diff, --stat)"]) == [
        "Read",
        "Bash(git log:*)",
        "Edit",
        "execute_command(git diff, --stat)",
    ]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("Reed", "unknown tool 'Reed'"),
        ("execute_command(git * main)", "only a trailing `*`"),
        ("read_file(src/**)", "only a trailing `*`"),
        ("execute_command(git", "expected NAME or NAME(PATTERN)"),
    ],
)
def test_bad_specs_are_config_errors(project, spec, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        _load(project, disallowed=[spec])


def test_known_tools_name_every_registered_tool():
    from mermaid_cli.run.assemble import build_registry

    settings = Settings.model_validate({"tools": {"computer": True}})
    names = {t.name for t in build_registry(settings, {}, interactive=True).current()}
    assert names <= KNOWN_TOOLS, names - KNOWN_TOOLS


def _events(project, turns, *args, user: str | None = None, env=None):
    script = write_script(project.parent / "script.jsonl", turns)
    if user is not None:
        cfg = project.parent / "cfg"
        cfg.mkdir(exist_ok=True)
        (cfg / "config.toml").write_text(user)
        env = {**(env or {}), "MERMAID_CONFIG_DIR": str(cfg)}
    out = run_inprocess(["--json", "--model", f"replay/{script}", *args, "go"], project, env=env)
    return out


ALLOW_TOUCH = """
[[safety.overrides]]
tool = "execute_command"
pattern = "touch"
decision = "allow"
"""


def test_a_disallowed_tool_is_denied_even_though_the_config_allows_it(project):
    turns = [call("execute_command", {"command": "touch out.txt"}), say("done")]
    out = _events(project, turns, "--safety", "ask", "--disallowed-tools", "Bash(touch *)", user=ALLOW_TOUCH)
    finished = [e for e in out.events if e["type"] == "tool_finished"]
    assert finished and finished[0]["status"] == "error", out.stdout
    assert "denied by --disallowed-tools Bash(touch *)" in out.stdout
    assert not (project / "out.txt").exists()
    # without the flag the same config runs it
    (project.parent / "script.jsonl").unlink()
    out = _events(project, turns, "--safety", "ask", user=ALLOW_TOUCH)
    assert (project / "out.txt").exists(), out.stdout


def test_an_allowed_tool_runs_where_the_mode_would_have_blocked_it(project):
    turns = [call("execute_command", {"command": "touch out.txt"}), say("done")]
    blocked = _events(project, turns, "--safety", "ask")
    assert blocked.code == 3, blocked.stdout
    out = _events(project, turns, "--safety", "ask", "--allowed-tools", "execute_command(touch *)")
    assert out.code == 0, out.stdout
    assert (project / "out.txt").exists()


def test_an_allowed_tool_cannot_lift_a_config_deny(project):
    user = '[[safety.overrides]]\ntool = "execute_command"\npattern = "touch"\ndecision = "deny"\n'
    turns = [call("execute_command", {"command": "touch out.txt"}), say("done")]
    out = _events(project, turns, "--safety", "full_access", "--allowed-tools", "Bash", user=user)
    assert not (project / "out.txt").exists(), out.stdout
    assert "blocked by policy override" in out.stdout


def test_a_bad_spec_is_exit_2_with_a_result_line(project):
    out = _events(project, [say("x")], "--disallowed-tools", "Reed")
    assert out.code == 2
    assert out.events[-1]["type"] == "result" and "unknown tool 'Reed'" in out.stdout
