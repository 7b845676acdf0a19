"""The kept core schemas of Mermaid's models (`cli.kept_schemas`): a later process completes every
model with the schema pydantic would generate, a change anywhere in the package's sources is
generated again, and a bad entry or file is only a miss."""

from __future__ import annotations

import _pickle
import json
import marshal
import re
import subprocess
import sys
import textwrap
import threading
import types
from pathlib import Path

import pytest
from pydantic import BaseModel, Field, ValidationError

from mermaid_cli.cli import kept_schemas
from mermaid_cli.cli.kept_schemas import FORMAT, KeptSchemas, current_key, keepable_name
from mermaid_cli.core.sources import source_stats

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _writing_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests keep schemas: as a process does that may write bytecode."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)


# every model of every module of the package: its JSON schema and its core schema (memory
# addresses and pydantic's id-based refs masked), completed with or without the kept schemas
ALL_MODELS = """
import importlib, json, pkgutil, re, sys
from pathlib import Path
mode, path = sys.argv[1], sys.argv[2]
if mode != "plain":
    from mermaid_cli.cli import kept_schemas
    kept = kept_schemas.install(Path(path))
import mermaid_cli
from pydantic import BaseModel
if mode == "some":  # a few modules only: a later process keeps these and makes the rest
    for name in ("mermaid_cli.core.types", "mermaid_cli.core.events", "mermaid_cli.config.sections.hooks"):
        importlib.import_module(name)
else:
    for info in pkgutil.walk_packages(mermaid_cli.__path__, "mermaid_cli."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
def models(base):
    for sub in base.__subclasses__():
        yield sub
        yield from models(sub)
out = {}
for m in set(models(BaseModel)):
    if m.__module__.startswith("mermaid_cli."):
        js = json.dumps(m.model_json_schema(), sort_keys=True, default=repr)  # (completes deferred ones)
        core = re.sub(r"0x[0-9a-f]+|:[0-9]{6,}", "#", repr(m.__pydantic_core_schema__))
        out[f"{m.__module__}:{m.__qualname__}"] = [js, core]
if mode != "plain":
    kept.save()
print(json.dumps({"models": out, "hits": 0 if mode == "plain" else kept.hits}))
"""


def _all_models(mode: str, path: Path, home: Path) -> dict[str, object]:
    (home / "project").mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "MERMAID_CONFIG_DIR": str(home / "mermaid-config"),
        "MERMAID_DATA_DIR": str(home / "mermaid-data"),
        "TMPDIR": str(home),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-c", ALL_MODELS, mode, str(path)],
        capture_output=True,
        text=True,
        cwd=home / "project",
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_every_model_of_the_package_is_completed_with_the_schema_pydantic_generates(tmp_path: Path) -> None:
    """Kept under one home, working directory and data dirs, used under others: a schema that
    depended on any of them (a default made from the environment at import) would differ."""
    path = tmp_path / "schemas.marshal"
    plain = _all_models("plain", path, tmp_path / "b")
    first = _all_models("keep", path, tmp_path / "a")
    second = _all_models("keep", path, tmp_path / "b")
    assert first["hits"] == 0 and path.exists()
    models = plain["models"]
    assert isinstance(models, dict) and len(models) > 100
    # (nearly) every model came from the file, and each is exactly what pydantic generates
    assert isinstance(second["hits"], int) and second["hits"] > 0.9 * len(models)
    assert second["models"] == models
    assert first["models"] == models


def test_models_made_around_kept_ones_are_the_models_pydantic_makes(tmp_path: Path) -> None:
    """Kept the models of a few modules only: the rest are generated, nesting kept schemas (whose
    refs pydantic made in another process)."""
    path = tmp_path / "schemas.marshal"
    plain = _all_models("plain", path, tmp_path / "b")
    some = _all_models("some", path, tmp_path / "a")
    mixed = _all_models("keep", path, tmp_path / "b")
    assert isinstance(some["models"], dict) and mixed["hits"] == len(some["models"]) > 20
    assert mixed["models"] == plain["models"]


# a package of two modules under a temporary root (loaded as `mermaid_cli._probe_*`, so their
# models are kept): the outer model nests the inner one
INNER = """
from pydantic import BaseModel, Field
class Inner(BaseModel):
    size: int = Field(ge={low})
"""
OUTER = """
from pydantic import BaseModel, field_validator
from mermaid_cli._probe_inner import Inner
class Outer(BaseModel):
    inner: Inner
    name: str = "x"

    @field_validator("name")
    @classmethod
    def _shout(cls, value: str) -> str:
        return value.upper()
"""
PROBE = """
import importlib.util, json, sys
from pathlib import Path
from mermaid_cli.cli import kept_schemas
root = Path(sys.argv[1])
kept = kept_schemas.install(root / "schemas.marshal", root)
for name in ("inner", "outer"):
    spec = importlib.util.spec_from_file_location(f"mermaid_cli._probe_{name}", root / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
from mermaid_cli._probe_outer import Outer
accepted = []
for size in (1, 5):
    try:
        accepted.append(Outer.model_validate({"inner": {"size": size}, "name": "ok"}).model_dump())
    except Exception as exc:
        accepted.append(type(exc).__name__)
kept.save()
print(json.dumps({"hits": kept.hits, "results": accepted}))
"""


def _probe(root: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(root)], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_a_changed_source_anywhere_in_the_package_is_generated_again(tmp_path: Path) -> None:
    (tmp_path / "inner.py").write_text(INNER.format(low=0))
    (tmp_path / "outer.py").write_text(OUTER)
    ok = [{"inner": {"size": 1}, "name": "OK"}, {"inner": {"size": 5}, "name": "OK"}]
    assert _probe(tmp_path) == {"hits": 0, "results": ok}
    assert _probe(tmp_path) == {"hits": 2, "results": ok}  # the validator defined in Outer too
    # the nested model's bound changes, its fields do not: Outer's kept schema (which inlines
    # Inner's) must not be used
    # (another size too: within one second, the import system would take the old `.pyc`)
    (tmp_path / "inner.py").write_text(INNER.format(low=3) + "# raised\n")
    assert _probe(tmp_path) == {"hits": 0, "results": ["ValidationError", ok[1]]}
    assert _probe(tmp_path) == {"hits": 2, "results": ["ValidationError", ok[1]]}


def _model(module: str = "mermaid_cli._test_models") -> type[BaseModel]:
    class Sized(BaseModel):
        __module__ = module
        __qualname__ = "Sized"
        size: int = Field(ge=1)

    return Sized


def test_a_kept_schema_reads_back_for_its_model_only(tmp_path: Path) -> None:
    model = _model()
    name = keepable_name(model)
    assert name == "mermaid_cli._test_models:Sized"
    first = KeptSchemas(tmp_path / "schemas.marshal", tmp_path)
    first.keep(model, name, model.__pydantic_core_schema__)
    first.save()
    second = KeptSchemas(tmp_path / "schemas.marshal", tmp_path)
    schema = second.schema_of(model, name)
    assert schema == model.__pydantic_core_schema__ and schema["cls"] is model and second.hits == 1

    class Other(BaseModel):  # same name, other fields: a miss
        __module__ = "mermaid_cli._test_models"
        __qualname__ = "Sized"
        width: int

    assert second.schema_of(Other, name) is None


def test_a_schema_naming_a_module_not_imported_is_a_miss_that_imports_nothing(tmp_path: Path) -> None:
    model = _model()
    name = keepable_name(model)
    assert name is not None
    absent = types.ModuleType("mermaid_cli_never_imported")
    absent.Thing = type("Thing", (), {"__module__": absent.__name__})  # type: ignore[attr-defined]
    sys.modules[absent.__name__] = absent
    try:
        data = _pickle.dumps({"type": "any", "thing": absent.Thing}, protocol=4)  # type: ignore[attr-defined]
    finally:
        del sys.modules[absent.__name__]
    path = tmp_path / "schemas.marshal"
    path.write_bytes(marshal.dumps((FORMAT, current_key(tmp_path), {name: (("size",), data)})))
    kept = KeptSchemas(path, tmp_path)
    assert kept.schema_of(model, name) is None and kept.hits == 0
    assert "mermaid_cli_never_imported" not in sys.modules


def _closing_over(value: object) -> object:
    return lambda item: (item, value)


def test_what_pickle_cannot_name_is_not_kept(tmp_path: Path) -> None:
    model = _model()
    kept = KeptSchemas(tmp_path / "schemas.marshal", tmp_path)
    kept.keep(model, "mermaid_cli._test_models:Sized", {"type": "any", "lock": threading.Lock()})
    # made inside another function, but over a value that could change after (not a class or an
    # immutable scalar): not kept either
    kept.keep(model, "mermaid_cli._test_models:Other", {"type": "any", "check": _closing_over([])})
    kept.save()
    assert not (tmp_path / "schemas.marshal").exists()


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not marshal",
        marshal.dumps((FORMAT + 1, [], {})),
        marshal.dumps((FORMAT, [("other key", 0, 0)], {})),
    ],
)
def test_a_damaged_or_foreign_file_is_a_miss_and_written_again(tmp_path: Path, content: bytes) -> None:
    model = _model()
    name = keepable_name(model)
    assert name is not None
    path = tmp_path / "schemas.marshal"
    path.write_bytes(content)
    kept = KeptSchemas(path, tmp_path)
    assert kept.schema_of(model, name) is None
    kept.keep(model, name, model.__pydantic_core_schema__)
    kept.save()
    layout, key, entries = marshal.loads(path.read_bytes())
    assert (layout, key, list(entries)) == (FORMAT, current_key(tmp_path), [name])


def test_a_path_field_s_validator_and_serializer_are_made_again_from_pydantic_s_code(tmp_path: Path) -> None:
    class Located(BaseModel):
        __module__ = "mermaid_cli._test_models"
        __qualname__ = "Located"
        where: Path
        maybe: Path | None = None

    Located.model_rebuild(_types_namespace={"Path": Path})  # (its module is not a real one)
    name = keepable_name(Located)
    assert name is not None
    first = KeptSchemas(tmp_path / "schemas.marshal", tmp_path)
    first.keep(Located, name, Located.__pydantic_core_schema__)
    first.save()
    schema = KeptSchemas(tmp_path / "schemas.marshal", tmp_path).schema_of(Located, name)
    assert schema is not None
    masked = re.compile(r" at 0x[0-9a-f]+")
    assert masked.sub("", repr(schema)) == masked.sub("", repr(Located.__pydantic_core_schema__))
    from pydantic_core import SchemaSerializer, SchemaValidator

    validator, serializer = SchemaValidator(schema), SchemaSerializer(schema)
    made = validator.validate_json('{"where": "a/b", "maybe": "/c"}')
    assert made.where == Path("a/b") and made.maybe == Path("/c")
    assert json.loads(serializer.to_json(made)) == {"where": "a/b", "maybe": "/c"}
    with pytest.raises(ValidationError, match="path"):
        validator.validate_json('{"where": 3}')


def test_nothing_is_kept_when_python_writes_no_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    model = _model()
    kept = KeptSchemas(tmp_path / "schemas.marshal", tmp_path)
    kept.keep(model, "mermaid_cli._test_models:Sized", model.__pydantic_core_schema__)
    kept.save()
    assert not (tmp_path / "schemas.marshal").exists()


def test_only_the_package_s_own_top_level_models_are_kept() -> None:
    assert keepable_name(_model("tests.somewhere")) is None
    assert keepable_name(_model("mermaid_cli._test_models")) is not None

    class Local(BaseModel):
        __module__ = "mermaid_cli._test_models"
        value: int

    assert "<locals>" in Local.__qualname__ and keepable_name(Local) is None
    assert keepable_name(int) is None


def test_the_key_follows_every_source_file(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("A = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("B = 1\n")
    (tmp_path / "sub" / "__pycache__").mkdir()
    (tmp_path / "sub" / "__pycache__" / "c.py").write_text("ignored\n")
    (tmp_path / "notes.txt").write_text("not a source\n")
    before = source_stats(str(tmp_path))
    assert [path for path, _, _ in before] == ["a.py", "sub/b.py"]
    (tmp_path / "sub" / "b.py").write_text("B = 22\n")
    assert source_stats(str(tmp_path)) != before
    assert current_key(tmp_path)[-2:] == source_stats(str(tmp_path))


def test_a_plain_exec_keeps_its_schemas_and_the_next_one_reads_them(tmp_path: Path) -> None:
    """`mermaid exec` installs the stand-in in a real process and saves at exit."""
    path = tmp_path / "schemas.marshal"
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from mermaid_cli.cli import kept_schemas
        kept_schemas.FILE = Path({str(path)!r})
        sys.argv = ["mermaid", "exec", "--json", "--model", "replay/{ROOT}/fixtures/demo/hello.jsonl", "create hello.txt"]
        from mermaid_cli.cli.entry import main
        main()
        """
    )
    project = tmp_path / "project"
    project.mkdir()
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "MERMAID_DATA_DIR": str(tmp_path / "data")}
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, cwd=project, env=env, timeout=60
        )
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.splitlines()[-1]))
        assert runs[-1]["type"] == "result" and "Warning" not in done.stderr
    assert runs[0]["status"] == runs[1]["status"] == "success"
    _, _, entries = marshal.loads(path.read_bytes())
    assert "mermaid_cli.core.events:Result" in entries and "mermaid_cli.core.types:Message" in entries


def test_a_failing_entry_leaves_pydantic_to_generate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Installed in this process: a model whose kept entry does not read back is generated and
    validates as declared."""
    monkeypatch.setattr(kept_schemas, "_installed", None)
    from pydantic._internal import _model_construction

    monkeypatch.setattr(_model_construction, "GenerateSchema", _model_construction.GenerateSchema)
    path = tmp_path / "schemas.marshal"
    path.write_bytes(
        marshal.dumps(
            (FORMAT, current_key(tmp_path), {"mermaid_cli._test_models:Sized": (("size",), b"\x80junk")})
        )
    )
    kept = kept_schemas.install(path, tmp_path)
    model = _model()
    assert kept.hits == 0 and list(kept.made) == ["mermaid_cli._test_models:Sized"]
    assert model(size=2).size == 2
    with pytest.raises(ValidationError):
        model(size=0)
