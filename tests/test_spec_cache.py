"""The tool-spec cache: a warm run sends the same first request as a cold one, and the key follows
what decides the tool set."""

from __future__ import annotations

import json

import pytest
from conftest import run_inprocess
from provider_fixtures import FakeProviderServer, fake_env

from mermaid_cli.config.dirs import data_dir
from mermaid_cli.config.loader import Settings
from mermaid_cli.run.assemble import build_registry, tool_groups
from mermaid_cli.tools import spec_cache
from mermaid_cli.tools.filters import ToolFilter

ANSWER = [
    {
        "type": "turn",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "stop",
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
]


def test_warm_cache_sends_the_same_request_as_a_cold_run(project, isolated_env, tmp_path, monkeypatch):
    monkeypatch.setattr(spec_cache, "SHARED_DIR", tmp_path / "shared")  # the first run is cold
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


def test_a_shared_entry_is_read_where_it_is_not_copied_into_a_fresh_data_dir(
    project, isolated_env, tmp_path, monkeypatch
):
    monkeypatch.setattr(spec_cache, "SHARED_DIR", tmp_path / "shared")
    for home in ("first", "second"):  # two CI jobs: the package is shared, each $HOME is fresh
        monkeypatch.setenv("MERMAID_DATA_DIR", str(tmp_path / home))
        with FakeProviderServer(ANSWER) as server:
            out = run_inprocess(
                ["--json", "--model", "anthropic/claude-sonnet-4-5", "hi"], project, env=fake_env(server)
            )
        assert out.code == 0, out.stderr
    assert list((tmp_path / "shared").glob("*.json"))  # written by the first run (from the shipped entry)
    assert list((tmp_path / "first" / "cache" / "tool-specs").glob("*.json"))
    assert not (tmp_path / "second" / "cache" / "tool-specs").exists()  # read from the shared dir


def counted_groups(settings: Settings, loads: list[str]) -> spec_cache.ToolGroups:
    """The run's tool groups, each recording its name in `loads` when it loads."""
    import os

    def counted(name: str, load):  # type: ignore[no-untyped-def]
        def run():  # type: ignore[no-untyped-def]
            loads.append(name)
            return load()

        return run

    groups = tool_groups(settings, os.environ, interactive=False)
    return {name: counted(name, load) for name, load in groups.items()}


def cached_pair(tmp_path, settings: Settings | None = None):  # type: ignore[no-untyped-def]
    """A fully built registry, and a CachedRegistry over its saved entry with counted groups."""
    settings = settings or Settings()
    real, group_of = spec_cache.build(counted_groups(settings, []), ToolFilter(settings.tools))
    spec_cache.save(tmp_path, "k", real, group_of)
    entry = spec_cache.load(tmp_path, "k")
    assert entry is not None
    loads: list[str] = []
    cached = spec_cache.CachedRegistry(entry, counted_groups(settings, loads), ToolFilter(settings.tools))
    return real, cached, loads


def test_cached_registry_loads_only_the_group_of_the_tool_called(tmp_path):
    real, cached, loads = cached_pair(tmp_path)
    assert cached.specs() == real.specs() and cached.names() == real.names() and not loads
    assert "read_file" in cached and len(cached) == len(real) and not loads
    assert cached.get("execute_command") is not None and loads == ["shell"]
    assert cached.get("background_process") is not None and loads == ["shell", "processes"]
    assert cached.get("read_file") is not None and loads == ["shell", "processes", "files"]
    assert cached.get("write_file") is not None and loads == ["shell", "processes", "files"]
    assert not cached.loaded and cached.specs() == real.specs()
    # a tool that is no built-in (a dynamic one, or one the model made up) loads nothing
    assert cached.get("no_such_tool") is None and loads == ["shell", "processes", "files"]
    # the whole list loads what is left, once, and keeps the registry's order
    assert [t.name for t in cached.current()] == [t.name for t in real.current()]
    assert cached.loaded and sorted(loads) == sorted(set(loads)) and len(loads) == len(spec_cache_groups())


def spec_cache_groups() -> list[str]:
    import os

    return list(tool_groups(Settings(), os.environ, interactive=False))


def test_a_group_keeps_the_tools_filter(tmp_path):
    """A tool `[tools]` turned off stays off when its group loads for a sibling."""
    settings = Settings.model_validate({"tools": {"disabled": ["write_file"]}})
    real, cached, loads = cached_pair(tmp_path, settings)
    assert "write_file" not in real.names() and "write_file" in cached.absent
    assert cached.get("read_file") is not None and loads == ["files"]
    assert cached.get("write_file") is None
    from mermaid_cli.core.types import ToolCallBlock, ToolResult

    bound = cached.bind(ToolCallBlock(id="c1", name="write_file", arguments={}))
    assert isinstance(bound, ToolResult) and bound.is_error and bound.content == cached.absent["write_file"]


def test_an_entry_without_groups_is_a_miss(tmp_path):
    real = build_registry(Settings(), {}, interactive=False)
    data = {"specs": [s.model_dump(mode="json") for s in real.specs()], "absent": real.absent}
    (tmp_path / "old.json").write_text(json.dumps(data))
    assert spec_cache.load(tmp_path, "old") is None


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
    from mermaid_cli.tools import base

    real, cached, _ = cached_pair(tmp_path)
    specs = cached.specs()
    monkeypatch.setattr(base, "_SPECS", {})  # a fresh process: no schema built yet
    built = []
    monkeypatch.setattr(base, "schema_of", lambda model: built.append(model) or {})
    assert cached.get("read_file") is not None and cached.current() and cached.loaded
    after = cached.specs()
    assert after == specs and all(a is b for a, b in zip(after, specs, strict=True))
    assert built == []


def test_the_agent_tools_schema_is_kept_with_the_specs(tmp_path, monkeypatch):
    """Every run makes its own `agent` tool (its description lists the run's agent types); its
    input schema comes from the cache entry instead of pydantic, and is the one pydantic builds."""
    from mermaid_cli.tools.agent import AgentArgs, AgentTool
    from mermaid_cli.tools.base import schema_of

    real, cached, _ = cached_pair(tmp_path)
    built = AgentTool("types").spec().input_schema
    assert built == schema_of(AgentArgs) and real.kept_schema("agent") is None

    def no_pydantic(model):  # type: ignore[no-untyped-def]
        raise AssertionError("the schema was built again")

    monkeypatch.setattr("mermaid_cli.tools.agent.schema_of", no_pydantic)
    kept = cached.kept_schema("agent")
    assert AgentTool("types", kept).spec().input_schema == built
    assert kept is not None
    kept["properties"] = {}  # each caller gets its own copy
    assert cached.kept_schema("agent") == built
    # an entry written before schemas were kept still loads; the tool builds its schema itself
    data = json.loads((tmp_path / "k.json").read_text())
    del data["schemas"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    entry = spec_cache.load(tmp_path, "old")
    assert entry is not None and entry.schemas == {}


def test_a_tool_call_imports_only_its_own_group(tmp_path):
    """`write_file` loads the read/write module, not the patch, edit or search code; the shell's
    `execute_command` not the background-process one (each ~ms on the path between two turns)."""
    import subprocess
    import sys

    head = f"""
import os, sys
from pathlib import Path
from mermaid_cli.config.loader import Settings
from mermaid_cli.run.assemble import tool_groups
from mermaid_cli.tools import spec_cache
from mermaid_cli.tools.filters import ToolFilter
settings = Settings()
groups = tool_groups(settings, os.environ, interactive=False)
where = Path({str(tmp_path)!r})
"""
    save = "real, group_of = spec_cache.build(groups, ToolFilter(settings.tools))\n"
    save += "spec_cache.save(where, 'k', real, group_of)\n"
    subprocess.run([sys.executable, "-c", head + save], check=True)
    call = """
cached = spec_cache.CachedRegistry(spec_cache.load(where, "k"), groups, ToolFilter(settings.tools))
assert "mermaid_cli.tools.files" not in sys.modules and "mermaid_cli.tools.shell" not in sys.modules
assert cached.get(sys.argv[1]) is not None
print(" ".join(sorted(m for m in sys.modules if m.startswith("mermaid_cli.tools."))))
"""
    seen = {}
    for tool in ("write_file", "execute_command"):
        out = subprocess.run(
            [sys.executable, "-c", head + call, tool], capture_output=True, text=True, check=True
        )
        seen[tool] = set(out.stdout.split())
    assert "mermaid_cli.tools.files" in seen["write_file"]
    others = {"mermaid_cli.tools.apply_patch", "mermaid_cli.tools.edit", "mermaid_cli.tools.search"}
    assert not others & seen["write_file"]
    assert "mermaid_cli.tools.shell" in seen["execute_command"]
    assert "mermaid_cli.tools.processes" not in seen["execute_command"]


# -- the entries the package ships, for the first run after an install ---------------------------


def test_the_shipped_entries_are_what_these_sources_build() -> None:
    from pydantic.version import VERSION

    from mermaid_cli.run import shipped_specs

    built_with = json.loads(spec_cache.SHIPPED.read_text(encoding="utf-8"))[shipped_specs.BUILT_WITH]
    if built_with["pydantic"] != VERSION:  # every key holds the version: they are simply not used
        pytest.skip(f"shipped with pydantic {built_with['pydantic']}, this is {VERSION}")
    assert spec_cache.SHIPPED.read_bytes() == shipped_specs.render(), (
        "tools/tool_specs.json is stale: run `python -m mermaid_cli.cli.shipped`"
    )


def _first_run_registry(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """`cached_registry` as the first run after an install sees it: no cache in the data dir or
    beside the bytecode; the tool groups it loads are recorded."""
    from mermaid_cli.run import assemble

    monkeypatch.setattr(spec_cache, "SHARED_DIR", tmp_path / "shared")
    env = {"MERMAID_DATA_DIR": str(tmp_path / "data")}
    loads: list[str] = []
    real_groups = assemble.tool_groups
    monkeypatch.setattr(
        assemble, "tool_groups", lambda settings, env, **kw: _counted(real_groups(settings, env, **kw), loads)
    )
    registry = assemble.cached_registry(Settings(), env, interactive=False, vision=True)
    return registry, loads, env


def _counted(groups: spec_cache.ToolGroups, loads: list[str]) -> spec_cache.ToolGroups:
    def counted(name: str, load):  # type: ignore[no-untyped-def]
        return lambda: (loads.append(name), load())[1]

    return {name: counted(name, load) for name, load in groups.items()}


def test_a_first_run_takes_the_shipped_entry_and_keeps_it(tmp_path, monkeypatch) -> None:
    registry, loads, env = _first_run_registry(tmp_path, monkeypatch)
    assert isinstance(registry, spec_cache.CachedRegistry)
    assert loads == []  # no tool module imported, no schema built before the first request
    assert registry.get("write_file") is not None and loads == ["files"]  # its group, at its call
    built = build_registry(Settings(), env, interactive=False, vision=True)
    assert [s.model_dump() for s in registry.specs()] == [s.model_dump() for s in built.specs()]
    key = spec_cache.cache_key(Settings(), env, interactive=False, vision=True)
    # kept under the run's own key, so the next run does not hash the sources again
    assert spec_cache.load(tmp_path / "data" / "cache" / "tool-specs", key) is not None
    assert spec_cache.load(tmp_path / "shared", key) is not None


def test_a_source_that_differs_by_a_byte_builds_its_own_entry(tmp_path, monkeypatch) -> None:
    import shutil

    package = tmp_path / "package"
    for name in spec_cache.SOURCE_DIRS:
        shutil.copytree(
            spec_cache.PACKAGE / name, package / name, ignore=shutil.ignore_patterns("__pycache__")
        )
    edited = package / "tools" / "shell.py"
    edited.write_bytes(edited.read_bytes() + b"\n")
    monkeypatch.setattr(spec_cache, "PACKAGE", package)
    registry, loads, _ = _first_run_registry(tmp_path, monkeypatch)
    assert not isinstance(registry, spec_cache.CachedRegistry)
    assert "shell" in loads and "files" in loads  # every group loaded to build the specs
