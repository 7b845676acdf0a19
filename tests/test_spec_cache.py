"""The tool-spec cache: a warm run sends the same first request as a cold one, and the key follows
what decides the tool set."""

from __future__ import annotations

import json

from conftest import run_inprocess
from provider_fixtures import FakeProviderServer, fake_env

from mermaid_cli.config.loader import Settings, data_dir
from mermaid_cli.run.assemble import build_registry
from mermaid_cli.tools import spec_cache

ANSWER = [
    {
        "type": "turn",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "stop",
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
]


def test_warm_cache_sends_the_same_request_as_a_cold_run(project, isolated_env):
    bodies = []
    for _ in range(2):
        with FakeProviderServer(ANSWER) as server:
            out = run_inprocess(
                ["--json", "--model", "anthropic/claude-sonnet-4-5", "hi"], project, env=fake_env(server)
            )
            assert out.code == 0, out.stderr
            bodies.append(json.dumps(server.requests[0]["body"], sort_keys=True))
    assert bodies[0] == bodies[1]
    assert list((data_dir() / "cache" / "tool-specs").glob("*.json"))


def test_cached_registry_loads_the_real_tools_on_first_use(tmp_path):
    import os

    settings = Settings()
    real = build_registry(settings, os.environ, interactive=False)
    spec_cache.save(tmp_path, "k", real)
    specs, absent = spec_cache.load(tmp_path, "k")
    loads = []

    def loader():
        loads.append(1)
        return build_registry(settings, os.environ, interactive=False)

    cached = spec_cache.CachedRegistry(specs, absent, loader)
    assert cached.specs() == real.specs() and cached.names() == real.names() and not loads
    assert cached.get("read_file") is not None and loads == [1]
    assert cached.specs() == real.specs()


def test_key_changes_with_what_decides_the_tool_set():
    base = Settings()
    env: dict[str, str] = {}
    key = spec_cache.cache_key(base, env, interactive=False)
    assert spec_cache.cache_key(base, env, interactive=True) != key
    assert spec_cache.cache_key(base, {"BRAVE_API_KEY": "x"}, interactive=False) != key
    no_net = Settings.model_validate({"safety": {"network": "deny"}})
    assert spec_cache.cache_key(no_net, env, interactive=False) != key
    assert spec_cache.cache_key(Settings(), env, interactive=False) == key


def test_a_corrupt_cache_file_is_ignored(tmp_path):
    (tmp_path / "bad.json").write_text("{not json")
    assert spec_cache.load(tmp_path, "bad") is None


def test_loaded_built_ins_keep_the_cached_specs(tmp_path, monkeypatch):
    """The first tool call loads the real tools; their schemas are not rebuilt for the next turn."""
    import os

    from mermaid_cli.tools import base

    settings = Settings()
    real = build_registry(settings, os.environ, interactive=False)
    spec_cache.save(tmp_path, "k", real)
    specs, absent = spec_cache.load(tmp_path, "k")
    monkeypatch.setattr(base, "_SPECS", {})  # a fresh process: no schema built yet
    built = []
    monkeypatch.setattr(base, "schema_of", lambda model: built.append(model) or {})
    cached = spec_cache.CachedRegistry(
        specs, absent, lambda: build_registry(settings, os.environ, interactive=False)
    )
    assert cached.get("read_file") is not None and cached.loaded
    after = cached.specs()
    assert after == specs and all(a is b for a, b in zip(after, specs, strict=True))
    assert built == []
