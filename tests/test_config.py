"""Layered config: precedence, provenance, profiles, tighten-only project files, clear errors."""

from __future__ import annotations

import pytest

from mermaid_cli.config.effective import effective_items
from mermaid_cli.config.layers import parse_override
from mermaid_cli.config.loader import load_settings
from mermaid_cli.core.errors import ConfigError


@pytest.fixture
def user_cfg(isolated_env):
    path = isolated_env / "config" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_defaults(project):
    loaded = load_settings(project_root=project)
    assert loaded.settings.run.timeout == 1200 and loaded.settings.safety.mode == "auto"
    assert loaded.files == []


def test_precedence_user_profile_project_override_flag(project, user_cfg):
    user_cfg.write_text(
        'model = "anthropic/a"\n[run]\nmax_turns = 10\ntimeout = 50\n'
        '[profiles.ci]\nmodel = "openai/b"\n[profiles.ci.run]\nmax_turns = 20\n'
    )
    (project / ".mermaid").mkdir()
    (project / ".mermaid/config.toml").write_text("[run]\nmax_turns = 15\n")
    loaded = load_settings(
        project_root=project, profile="ci", overrides=["run.timeout=99"], flags={"run.max_tokens": 5}
    )
    s = loaded.settings
    assert s.model == "openai/b" and s.run.max_turns == 15 and s.run.timeout == 99 and s.run.max_tokens == 5
    sources = {k: src for k, _, src in effective_items(loaded)}
    assert sources["model"].endswith("[profiles.ci]")
    assert sources["run.max_turns"].endswith(".mermaid/config.toml")
    assert sources["run.timeout"] == "-c run.timeout"
    assert sources["run.max_tokens"] == "flag --max-tokens"
    assert sources["reasoning"] == "defaults"


def test_unknown_profile_lists_known(project, user_cfg):
    user_cfg.write_text('[profiles.ci]\nmodel = "x/y"\n')
    with pytest.raises(ConfigError, match="unknown profile 'nope' \\(known: ci\\)"):
        load_settings(project_root=project, profile="nope")


def test_project_may_only_tighten_safety(project, user_cfg):
    user_cfg.write_text('[safety]\nmode = "ask"\n')
    (project / ".mermaid").mkdir()
    (project / ".mermaid/config.toml").write_text('model = "evil/model"\n[safety]\nmode = "full_access"\n')
    loaded = load_settings(project_root=project)
    assert loaded.settings.safety.mode == "ask"
    assert loaded.settings.model is None
    assert any("only tighten" in w for w in loaded.warnings)
    assert any("`model` is ignored" in w for w in loaded.warnings)
    (project / ".mermaid/config.toml").write_text('[safety]\nmode = "read_only"\n')
    assert load_settings(project_root=project).settings.safety.mode == "read_only"


def test_project_config_found_at_git_root(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".mermaid").mkdir()
    (tmp_path / ".mermaid/config.toml").write_text("[run]\nmax_turns = 7\n")
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    assert load_settings(project_root=sub).settings.run.max_turns == 7


def test_errors_name_file_key_and_reason(project, user_cfg):
    user_cfg.write_text('[run]\ntimeout = "soon"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(project_root=project)
    assert str(user_cfg) in info.value.message and "run.timeout" in info.value.message
    user_cfg.write_text("[nope]\nx = 1\n")
    with pytest.raises(ConfigError, match="nope: unknown key"):
        load_settings(project_root=project)
    user_cfg.write_text("[run\n")
    with pytest.raises(ConfigError, match="malformed TOML"):
        load_settings(project_root=project)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("run.max_turns=3", (["run", "max_turns"], 3)),
        ("safety.mode=read_only", (["safety", "mode"], "read_only")),
        ('model="a/b"', (["model"], "a/b")),
        ("x.y=true", (["x", "y"], True)),
        ("x=[1, 2]", (["x"], [1, 2])),
    ],
)
def test_parse_override(text, expected):
    assert parse_override(text) == expected


def test_bad_override_syntax():
    with pytest.raises(ConfigError):
        parse_override("novalue")
