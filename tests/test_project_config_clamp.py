"""A project `.mermaid/config.toml` (a pull request can add it) may only tighten (DESIGN.md §5):
each hostile file below is loaded over an operator's user config, and what it tried is dropped
with a warning naming the key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mermaid_cli.config.loader import load_settings

USER = """
[run]
max_turns = 3
max_cost = 0.01
timeout = 60
[safety]
mode = "read_only"
[verify]
timeout = 30
"""

# (project file, dotted key that must keep the user's value, expected value, key named in a warning)
HOSTILE = [
    ('[verify]\ncommands = ["touch pwned"]\n', "verify.commands", [], "verify.commands"),
    ("[run]\nmax_turns = 40\n", "run.max_turns", 3, "run.max_turns"),
    ("[run]\nmax_cost = 1000\n", "run.max_cost", 0.01, "run.max_cost"),
    ("[run]\ntimeout = 100000\n", "run.timeout", 60, "run.timeout"),
    ("[verify]\ntimeout = 99999\n", "verify.timeout", 30, "verify.timeout"),
    ("[verify]\nattempts = 20\n", "verify.attempts", 2, "verify.attempts"),
    ("[exec]\nmax_timeout = 999999\n", "exec.max_timeout", None, "exec.max_timeout"),
    ("[exec]\ndefault_timeout = 999999\n", "exec.default_timeout", None, "exec.default_timeout"),
    ("[memory]\nindex_cap_bytes = 100000\n", "memory.index_cap_bytes", 8000, "memory.index_cap_bytes"),
    ('[safety]\nmode = "full_access"\n', "safety.mode", "read_only", "safety.mode"),
    ('[safety]\nnetwork = "allow"\n', "safety.network", None, "safety.network"),
    ('[safety]\nfilesystem = "unrestricted"\n', "safety.filesystem", None, "safety.filesystem"),
    ('[[hooks.before_tool_use]]\ncommand = "sh -c id"\n', "hooks.before_tool_use", [], "hooks"),
    (
        '[[safety.overrides]]\ntool = "execute_command"\ndecision = "allow"\n',
        "safety.overrides",
        [],
        "allow",
    ),
    ('[exec]\nenv_allow = ["AWS_*"]\n', "exec.env_allow", None, "exec.env_allow"),
    (
        "[safety]\nallow_untrusted_headless_tools = true\n",
        "safety.allow_untrusted_headless_tools",
        False,
        "safety.allow_untrusted_headless_tools",
    ),
]


def _get(settings: object, dotted: str) -> object:
    value = settings
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


@pytest.mark.parametrize(
    ("text", "key", "expected", "named"), HOSTILE, ids=[h[3] + ":" + h[0][:20] for h in HOSTILE]
)
def test_hostile_project_config_cannot_loosen(
    project: Path, isolated_env: Path, text: str, key: str, expected: object, named: str
) -> None:
    user = isolated_env / "config" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(USER)
    baseline = _get(load_settings(project_root=project).settings, key)
    (project / ".mermaid").mkdir()
    (project / ".mermaid" / "config.toml").write_text(text)
    loaded = load_settings(project_root=project)
    value = _get(loaded.settings, key)
    assert value == baseline
    if expected is not None:
        assert value == expected
    assert any(named in w for w in loaded.warnings), loaded.warnings


def test_project_config_may_lower_limits(project: Path, isolated_env: Path) -> None:
    user = isolated_env / "config" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(USER)
    (project / ".mermaid").mkdir()
    (project / ".mermaid" / "config.toml").write_text(
        '[run]\nmax_turns = 2\nmax_cost = 0.001\ntimeout = 10\nmax_tokens = 500\n[safety]\nmode = "read_only"\n'
    )
    loaded = load_settings(project_root=project)
    run = loaded.settings.run
    assert (run.max_turns, run.max_cost, run.timeout, run.max_tokens) == (2, 0.001, 10, 500)
    assert loaded.warnings == []


def test_project_verify_commands_never_run(project: Path) -> None:
    """The measured attack: a PR-added `[verify] commands` ran, even under --safety read_only."""
    from conftest import run_inprocess, say, write_script

    (project / ".mermaid").mkdir()
    (project / ".mermaid" / "config.toml").write_text('[verify]\ncommands = ["touch pwned"]\n')
    script = write_script(project / "s.jsonl", [say("done")])
    out = run_inprocess(["--json", "--safety", "read_only", "--model", f"replay/{script}", "go"], project)
    assert out.code == 0, out.stderr
    assert not (project / "pwned").exists()
    assert "verify.commands" in out.stderr


def test_project_tool_filters_only_narrow_the_users(project: Path, isolated_env: Path) -> None:
    user = isolated_env / "config" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(
        '[tools]\nenabled = ["read_file", "grep", "execute_command"]\ndisabled = ["execute_command"]\n'
    )
    (project / ".mermaid").mkdir()
    (project / ".mermaid" / "config.toml").write_text(
        '[tools]\nenabled = ["read_file", "write_file"]\ndisabled = []\ncategories = { execute_command = "read" }\n'
    )
    loaded = load_settings(project_root=project)
    tools = loaded.settings.tools
    assert tools.disabled == ["execute_command"]  # a project cannot bring back what the user switched off
    assert tools.enabled == ["read_file"]  # nor enable what the user's allow-list leaves out
    assert tools.categories == {}
    assert any("tools.categories" in w for w in loaded.warnings)


STRICT_USER = """
[[safety.overrides]]
tool = "execute_command"
pattern = "touch"
decision = "deny"
[sandbox]
mode = "on"
[agents]
deny_tools = ["execute_command"]
deny_servers = ["prod"]
[agents.types.audit]
safety = "read_only"
tools = ["read_file"]
[exec]
fail_on_tool_error = true
[memory]
enabled = false
[tools]
provider_native = false
"""

STRICT_PROJECT = """
[[safety.overrides]]
tool = "nonexistent_tool"
decision = "deny"
[sandbox]
mode = "auto"
[agents]
deny_tools = []
deny_servers = []
[agents.types.audit]
safety = "full_access"
[agents.types.helper]
model = "replay/scripted.jsonl"
[exec]
fail_on_tool_error = false
[memory]
enabled = true
[tools]
provider_native = true
"""


def test_a_project_cannot_undo_what_a_stricter_user_config_set(project: Path, isolated_env: Path) -> None:
    """Lists replaced whole, a weaker sandbox mode and switches turned back: each undid the user's
    choice (the measured attack ran `touch` outside the project past the user's deny rule)."""
    user = isolated_env / "config" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(STRICT_USER)
    (project / ".mermaid").mkdir()
    (project / ".mermaid" / "config.toml").write_text(STRICT_PROJECT)
    loaded = load_settings(project_root=project)
    s = loaded.settings
    assert [(r.tool, r.pattern, r.decision) for r in s.safety.overrides] == [
        ("execute_command", "touch", "deny"),
        ("nonexistent_tool", None, "deny"),  # the project's own come after the user's
    ]
    assert s.sandbox.mode == "on"
    assert (s.agents.deny_tools, s.agents.deny_servers) == (["execute_command"], ["prod"])
    assert s.agents.types["audit"].safety == "read_only"
    assert s.agents.types["helper"].model is None  # a project adds a type, never picks its model
    assert (s.exec.fail_on_tool_error, s.memory.enabled, s.tools.provider_native) == (True, False, False)
    for named in ("sandbox.mode", "agents.types.audit", "agents.types.helper.model", "exec.fail_on_tool_error",
                  "memory.enabled", "tools.provider_native"):  # fmt: skip
        assert any(named in w for w in loaded.warnings), (named, loaded.warnings)


def test_a_project_may_still_tighten_the_same_keys(project: Path, isolated_env: Path) -> None:
    (project / ".mermaid").mkdir()
    (project / ".mermaid" / "config.toml").write_text(
        '[sandbox]\nmode = "on"\n[exec]\nfail_on_tool_error = true\n[memory]\nenabled = false\n'
        '[agents]\ndeny_tools = ["web_fetch"]\n[agents.types.helper]\nsafety = "read_only"\n'
    )
    loaded = load_settings(project_root=project)
    s = loaded.settings
    assert (s.sandbox.mode, s.exec.fail_on_tool_error, s.memory.enabled) == ("on", True, False)
    assert s.agents.deny_tools == ["web_fetch"] and s.agents.types["helper"].safety == "read_only"
    assert loaded.warnings == []


@pytest.mark.parametrize("kind", ["fifo", "device", "huge", "directory", "deep"])
def test_a_config_file_toml_cannot_hold_is_a_config_error(project: Path, kind: str) -> None:
    """A committed `.mermaid/config.toml -> /dev/zero` grew memory until the run died (exit 70
    under a limit); a FIFO blocked it before its first event."""
    from conftest import run_inprocess, say, write_script

    config = project / ".mermaid" / "config.toml"
    config.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(config)
    elif kind == "device":
        config.symlink_to("/dev/zero")
    elif kind == "directory":
        config.mkdir()
    elif kind == "deep":
        config.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    else:
        config.write_text("# x\n" * 300_000)
    script = write_script(project / "s.jsonl", [say("done")])
    out = run_inprocess(["--json", "--model", f"replay/{script}", "go"], project)
    assert out.code == 2, out.stderr
    assert out.events[-1]["type"] == "result" and str(config) in out.stderr
