"""What the path to the first model request must not pay for (issue 23): guards on the shapes
that cost CPU at import, each checked over the whole package rather than timed."""

from __future__ import annotations

import dataclasses
import importlib
import os
import pkgutil
import subprocess
import sys

from conftest import call, say, write_script
from pydantic import BaseModel

import mermaid_cli
from mermaid_cli.core.defaults import empty_list


def _our_models() -> list[type[BaseModel]]:
    return [value for value in _our_classes() if issubclass(value, BaseModel)]


def _our_classes() -> list[type]:
    # importing cli.main switches pydantic plugins off through the environment: keep that out of
    # the subprocesses the other tests start
    saved = dict(os.environ)
    try:
        return _walk_classes()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _walk_classes() -> list[type]:
    classes: list[type] = []
    for info in pkgutil.walk_packages(mermaid_cli.__path__, "mermaid_cli."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == info.name:
                classes.append(value)
    return classes


def test_every_dataclass_has_a_docstring():
    # a dataclass without one gets `Name(field: type = default, ...)` as its docstring, which
    # dataclasses builds with inspect.signature() at class creation: 0.1-0.2 ms a class, ~25 of
    # them before a run's first request
    undocumented = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in _our_classes()
        if dataclasses.is_dataclass(cls) and (cls.__doc__ or "").startswith(cls.__name__ + "(")
    ]
    assert undocumented == []


def test_no_model_field_uses_a_builtin_default_factory():
    # pydantic asks inspect.signature() of every factory; for a builtin that parses its text
    # signature (0.2 ms a field, 4 ms the first time): core.defaults.empty_list is the cheap one
    builtin = [
        f"{model.__module__}.{model.__qualname__}.{name}"
        for model in _our_models()
        for name, info in model.model_fields.items()
        if info.default_factory in (list, tuple, set, frozenset)
    ]
    assert builtin == []


def test_empty_list_is_a_new_list_per_instance_and_no_schema_default():
    from pydantic import Field

    class Probe(BaseModel):
        items: list[str] = Field(default_factory=empty_list)

    first, second = Probe(), Probe()
    first.items.append("x")
    assert second.items == []
    assert "default" not in Probe.model_json_schema()["properties"]["items"]


# the run ends with os._exit, so the probe reports each scan as it happens
PLUGIN_PROBE = """
import importlib.metadata, sys
real = importlib.metadata.entry_points
def entry_points(**params):
    sys.stderr.write(f"SCAN {params.get('group')}\\n")
    return real(**params)
importlib.metadata.entry_points = entry_points
from mermaid_cli.cli.main import main
main()
"""


def test_a_run_never_scans_for_pydantic_plugins_and_children_do_not_inherit_the_switch(project, tmp_path):
    # the CLI turns pydantic plugins off and drops the variable after setup (children must not
    # see it); the models built after that must not start the entry-point scan all the same
    script = write_script(
        tmp_path / "s.jsonl",
        [call("execute_command", {"command": "echo switch=${PYDANTIC_DISABLE_PLUGINS:-unset}"}), say("done")],
    )
    argv = ["exec", "--json", "--safety", "full_access", "--model", f"replay/{script}", "go"]
    proc = subprocess.run(
        [sys.executable, "-c", PLUGIN_PROBE, *argv], capture_output=True, text=True, cwd=project
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "switch=unset" in proc.stdout
    assert "SCAN pydantic" not in proc.stderr


# reports each import it watches as it happens (the run ends with os._exit)
IMPORT_PROBE = """
import sys
def hook(event, args):
    if event == "import" and args[0] in ("mermaid_cli.store.checkpoints", "importlib.metadata"):
        sys.stderr.write(f"IMPORTED {args[0]}\\n")
sys.addaudithook(hook)
from mermaid_cli.cli.main import main
main()
"""


def test_the_checkpoint_store_loads_on_the_first_file_change_only(project, tmp_path, isolated_env):
    def run(turns: list[dict]) -> subprocess.CompletedProcess[str]:
        script = write_script(tmp_path / "s.jsonl", turns)
        argv = ["exec", "--json", "--safety", "full_access", "--model", f"replay/{script}", "go"]
        return subprocess.run(
            [sys.executable, "-c", IMPORT_PROBE, *argv], capture_output=True, text=True, cwd=project
        )

    answer_only = run([say("nothing to change")])
    assert answer_only.returncode == 0, answer_only.stdout + answer_only.stderr
    assert "IMPORTED mermaid_cli.store.checkpoints" not in answer_only.stderr
    # pydantic's plugin loader (and with it importlib.metadata, zipfile, email) stays out too
    assert "IMPORTED importlib.metadata" not in answer_only.stderr

    writes = run([call("write_file", {"path": "a.txt", "content": "hi\n"}), say("done")])
    assert writes.returncode == 0, writes.stdout + writes.stderr
    assert "IMPORTED mermaid_cli.store.checkpoints" in writes.stderr
    assert (project / "a.txt").read_text() == "hi\n"
    assert len(list((isolated_env / "data").glob("checkpoints/*/manifest.json"))) == 1
