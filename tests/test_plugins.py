"""Plugins: the manifest audit (escapes refused at install), the lock file, enabling only from the
user config, bundle precedence (the user's servers and types win), and prompt commands."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, run_inprocess, run_mermaid, say, write_script

from mermaid_cli.config.loader import load_settings
from mermaid_cli.extensions.commands import CommandRoot, discover, substitute
from mermaid_cli.extensions.manifest import PluginError, audit
from mermaid_cli.extensions.plugins import enabled_plugins, install, lock_path, set_enabled
from mermaid_cli.extensions.session import load_for_run

ACME = FIXTURES / "plugins" / "acme"


def plugin(tmp: Path, manifest: str, name: str = "p") -> Path:
    root = tmp / name
    root.mkdir(parents=True, exist_ok=True)
    (root / "plugin.toml").write_text(manifest)
    return root


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('skills = ["../outside"]', "uses `..`"),
        ('hooks = ["/bin/sh"]', "is absolute"),
        ('mcp = ["missing.toml"]', "does not exist"),
        ('prompts = ["link/deploy.md"]', "outside the plugin"),
    ],
)
def test_a_path_that_escapes_is_refused_at_install(tmp_path, entry, message):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "deploy.md").write_text("x")
    root = plugin(tmp_path, f'name = "evil"\n{entry}\n')
    os.symlink(tmp_path / "outside", root / "link")
    with pytest.raises(PluginError, match=message.replace("`", ".")):
        install(root)
    assert not lock_path().exists()
    out = run_mermaid(["plugin", "install", str(root)], tmp_path)
    assert out.code == 1 and message in out.stderr and "Traceback" not in out.stderr


def test_a_symlink_out_anywhere_in_the_tree_is_refused(tmp_path):
    root = plugin(tmp_path, 'name = "sneaky"\n')
    (root / "data").mkdir()
    os.symlink("../../..", root / "data" / "up")
    with pytest.raises(PluginError, match="a symlink out of the plugin"):
        audit(root)
    os.unlink(root / "data" / "up")
    os.symlink("/etc/passwd", root / "data" / "abs")
    with pytest.raises(PluginError, match="absolute symlink"):
        audit(root)


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ('name = "Bad Name"\n', "name"),
        ('name = "x"\nsurprise = 1\n', "unknown key"),
        ("name = \n", "malformed TOML"),
        ('version = "1"\n', "name"),
    ],
)
def test_bad_manifests_are_clear_errors(tmp_path, manifest, message):
    out = run_mermaid(["plugin", "audit", str(plugin(tmp_path, manifest))], tmp_path)
    assert out.code == 1 and message in out.stderr and "Traceback" not in out.stderr


def test_install_copies_disabled_and_reinstall_disables_again(tmp_path):
    src = tmp_path / "acme"
    shutil.copytree(ACME, src, symlinks=True)
    checked, existed = install(src)
    assert not existed and checked.root != src.resolve()
    lock = json.loads(lock_path().read_text())
    assert lock["plugins"]["acme"]["enabled"] is False and lock["plugins"]["acme"]["version"] == "1.2.0"
    set_enabled("acme", True)
    (src / "plugin.toml").write_text((src / "plugin.toml").read_text().replace("1.2.0", "1.3.0"))
    assert "1.2.0" in (checked.root / "plugin.toml").read_text()  # the copy is what runs
    _, existed = install(src)
    lock = json.loads(lock_path().read_text())
    assert (
        existed
        and lock["plugins"]["acme"]["enabled"] is False
        and lock["plugins"]["acme"]["version"] == "1.3.0"
    )
    out = run_mermaid(["plugin", "audit", str(src)], tmp_path)
    assert (
        out.code == 0 and "hooks: hooks/guard" in out.stdout and "(declared) denies tool calls" in out.stdout
    )
    assert run_mermaid(["plugin", "enable", "nope"], tmp_path).code == 1


def test_only_the_user_config_can_enable_a_plugin(project, isolated_env):
    install(ACME)
    (project / ".mermaid").mkdir()
    (project / ".mermaid" / "config.toml").write_text('[plugins]\nenabled = ["acme"]\n')
    loaded = load_settings(project_root=project)
    assert loaded.settings.plugins.enabled == []
    assert any("`plugins` is ignored in a project config" in w for w in loaded.warnings)
    assert enabled_plugins(loaded.settings)[0] == []
    script = write_script(project / "s.jsonl", [say("ok")])
    out = run_inprocess(["--json", "--model", f"replay/{script}", "hi"], project)
    assert out.events[0]["plugins"] == [] and "`plugins` is ignored in a project config" in out.stderr
    (isolated_env / "config").mkdir(parents=True, exist_ok=True)
    (isolated_env / "config" / "config.toml").write_text('[plugins]\nenabled = ["acme"]\n')
    out = run_inprocess(["--json", "--model", f"replay/{script}", "hi"], project)
    assert out.events[0]["plugins"] == ["acme"]


def test_the_users_own_server_and_agent_type_win_with_a_warning(project, isolated_env):
    install(ACME)
    set_enabled("acme", True)
    (isolated_env / "config").mkdir(parents=True, exist_ok=True)
    (isolated_env / "config" / "config.toml").write_text('[mcp_servers.acme]\ncommand = "my-own-server"\n')
    settings = load_settings(project_root=project).settings
    notes: list[str] = []
    ext = load_for_run(settings, project, os.environ, note=notes.append)
    assert settings.mcp_servers["acme"].command == "my-own-server"
    assert any("MCP server 'acme' is also in your config; yours wins" in n for n in notes)
    assert [h.name for h in settings.hooks.before_tool_use] == ["acme"]
    assert [t.name for t in ext.agent_types] == ["release-checker"]
    from mermaid_cli.extensions.bundles import contributions

    bundle = contributions(ext.plugins, configured_servers={}, configured_types=["release-checker"])
    assert bundle.agent_types == [] and any(
        "agent type 'release-checker'" in w and "yours wins" in w for w in bundle.warnings
    )
    served = bundle.servers["acme"]
    assert served.command == str(ext.plugins[0].root / "bin" / "acme-server") and served.cwd == str(
        ext.plugins[0].root
    )


def test_a_dot_slash_server_command_that_leads_out_is_skipped(tmp_path, isolated_env, project):
    root = plugin(tmp_path, 'name = "leaky"\nmcp = ["servers.toml"]\n')
    (root / "servers.toml").write_text('[servers.leak]\ncommand = "./../../bin/sh"\n[servers.bad]\nurl = 3\n')
    install(root)
    set_enabled("leaky", True)
    settings = load_settings(project_root=project).settings
    notes: list[str] = []
    load_for_run(settings, project, os.environ, note=notes.append)
    assert "leak" not in settings.mcp_servers and "bad" not in settings.mcp_servers
    assert any("server 'leak' skipped" in n and "`..`" in n for n in notes)
    assert any("server 'bad' skipped" in n for n in notes)


def _commands(tmp: Path) -> list[CommandRoot]:
    return [
        CommandRoot("project", tmp / "project"),
        CommandRoot("user", tmp / "user"),
        CommandRoot("plugin:acme", files=tuple(sorted((tmp / "plugin").glob("*.md")))),
    ]


@pytest.mark.parametrize(
    ("present", "winner"),
    [
        (("project", "user", "plugin"), "project"),
        (("user", "plugin"), "user"),
        (("plugin",), "plugin:acme"),
    ],
)
def test_prompt_command_precedence(tmp_path, present, winner):
    for where in present:
        (tmp_path / where).mkdir(parents=True, exist_ok=True)
        (tmp_path / where / "deploy.md").write_text(f"from {where}: $ARGUMENTS")
    commands = discover(_commands(tmp_path))
    assert commands.commands["deploy"].origin == winner
    assert commands.expand("/deploy prod") == (f"from {present[0]}: prod", None)


def test_builtin_names_win_and_unknown_names_are_sent_as_written(tmp_path):
    (tmp_path / "project" / "group").mkdir(parents=True)
    (tmp_path / "project" / "help.md").write_text("hijack")
    (tmp_path / "project" / "group" / "review-pr.md").write_text("---\nname: rv\n---\nReview $1 then $2.")
    (tmp_path / "project" / "Bad.md").write_text("x")
    commands = discover(_commands(tmp_path))
    assert sorted(commands.commands) == ["rv"]
    assert any("/help is a built-in name" in w for w in commands.warnings)
    assert any("'Bad' is not [a-z0-9-]+" in w for w in commands.warnings)
    text, warning = commands.expand("/help me")
    assert text == "/help me" and "built-in" in (warning or "")
    text, warning = commands.expand("/nope now")
    assert text == "/nope now" and "not a known prompt command" in (warning or "")
    assert commands.expand("/usr/bin/env is broken") == ("/usr/bin/env is broken", None)
    assert commands.expand("/rv 12 'a b'\n\n```\nlog\n```") == ("Review 12 then a b.\n\n```\nlog\n```", None)


def test_arguments_substitution_or_appended():
    assert substitute("Deploy to $ARGUMENTS now.", "prod eu") == "Deploy to prod eu now."
    assert substitute("Deploy.", "prod") == "Deploy.\n\nprod"
    assert substitute("Deploy.", "") == "Deploy."


def test_a_project_command_expands_in_a_run_and_the_session_holds_it(project):
    (project / ".mermaid" / "commands").mkdir(parents=True)
    (project / ".mermaid" / "commands" / "fix-issue.md").write_text("Fix issue #$ARGUMENTS and add a test.")
    script = write_script(project / "s.jsonl", [say("ok")])
    out = run_inprocess(["--json", "--model", f"replay/{script}", "/fix-issue 123"], project)
    assert out.code == 0, out.stderr
    session = next((project / ".mermaid" / "conversations").glob("*.jsonl")).read_text()
    assert "Fix issue #123 and add a test." in session and "/fix-issue" not in session
