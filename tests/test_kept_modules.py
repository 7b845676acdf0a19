"""The kept module code (`cli.kept_modules`): a later process runs exactly what importing from
source would run, and a change anywhere the import system looks wins over what is kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# a process that imports `mod` (and `pkg.sub`) with the kept modules of KEPT installed, and says
# which loader loaded them and what they hold
PROBE = """
import json, sys
sys.path[1:1] = {lib_dirs!r}
from mermaid_cli.cli import kept_modules
kept_modules.install({kept!r})
import inspect, mod, pkg.sub
out = {{
    name: {{
        "loader": type(m.__spec__.loader).__name__,
        "value": m.VALUE,
        "file": m.__file__,
        "cached": m.__cached__,
        "source": inspect.getsource(m),
        "package": m.__spec__.submodule_search_locations,
    }}
    for name, m in (("mod", mod), ("pkg", sys.modules["pkg"]), ("pkg.sub", pkg.sub))
}}
print(json.dumps(out))
kept_modules.save()
"""


def _write(path: Path, text: str, mtime_s: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime_s is not None:
        os.utime(path, ns=(mtime_s * 10**9, mtime_s * 10**9))


def _library(root: Path) -> Path:
    lib = root / "lib"
    (root / "kept").mkdir()  # (made by the first save, it would change the directory probe.py is in)
    (root / "probe.py").touch()
    _write(lib / "mod.py", "VALUE = 'one'\n", 1_700_000_000)
    _write(lib / "pkg" / "__init__.py", "VALUE = 'package'\n", 1_700_000_000)
    _write(lib / "pkg" / "sub.py", "VALUE = 'sub'\n", 1_700_000_000)
    return lib


def _run(root: Path, probe: str, lib_dirs: list[Path], **env: str) -> str:
    """Run `probe` (formatted with lib_dirs and the kept directory) as root/probe.py; its stdout."""
    script = root / "probe.py"  # (a script's own directory is an absolute `sys.path` entry)
    script.write_text(probe.format(lib_dirs=[str(d) for d in lib_dirs], kept=str(root / "kept")))
    full = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    full.update(env)
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=full, timeout=60, cwd=root
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _probe(root: Path, lib_dirs: list[Path], **env: str) -> dict[str, dict[str, object]]:
    result: dict[str, dict[str, object]] = json.loads(_run(root, PROBE, lib_dirs, **env))
    return result


def _kept_files(root: Path) -> list[Path]:
    return sorted((root / "kept").glob("kept-modules.*.marshal"))


def test_a_second_process_runs_the_kept_code_with_the_same_module_attributes(tmp_path: Path) -> None:
    lib = _library(tmp_path)
    first = _probe(tmp_path, [lib])
    assert {m["loader"] for m in first.values()} == {"SourceFileLoader"}
    assert len(_kept_files(tmp_path)) == 1

    second = _probe(tmp_path, [lib])
    assert {m["loader"] for m in second.values()} == {"KeptLoader"}
    for name in first:  # what a module sees of itself is what the source loader gave it
        assert {k: v for k, v in second[name].items() if k != "loader"} == {
            k: v for k, v in first[name].items() if k != "loader"
        }
    assert second["pkg"]["package"] == [str(lib / "pkg")]
    assert second["pkg.sub"]["value"] == "sub"


def test_an_edited_source_is_imported_from_source_then_kept_again(tmp_path: Path) -> None:
    lib = _library(tmp_path)
    _probe(tmp_path, [lib])
    # the same size and a new modification time: only the time tells them apart
    _write(lib / "mod.py", "VALUE = 'two'\n", 1_700_000_100)
    edited = _probe(tmp_path, [lib])
    assert edited["mod"] == {**edited["mod"], "loader": "SourceFileLoader", "value": "two"}
    assert edited["pkg.sub"]["loader"] == "KeptLoader"  # the others are still kept

    again = _probe(tmp_path, [lib])
    assert again["mod"]["loader"] == "KeptLoader" and again["mod"]["value"] == "two"


# imports `mod` only, with the kept modules installed
MOD_ONLY_PROBE = """
import sys
sys.path[1:1] = {lib_dirs!r}
from mermaid_cli.cli import kept_modules
kept_modules.install({kept!r})
import mod
kept_modules.save()
"""


def test_a_module_first_imported_by_a_later_process_is_kept_beside_the_others(tmp_path: Path) -> None:
    lib = _library(tmp_path)
    _run(tmp_path, MOD_ONLY_PROBE, [lib])  # keeps `mod` alone
    second = _probe(tmp_path, [lib])  # the file in place: `mod` served, the package new
    assert {name: m["loader"] for name, m in second.items()} == {
        "mod": "KeptLoader",
        "pkg": "SourceFileLoader",
        "pkg.sub": "SourceFileLoader",
    }
    assert {m["loader"] for m in _probe(tmp_path, [lib]).values()} == {"KeptLoader"}


def test_a_module_that_now_shadows_a_kept_one_is_the_one_imported(tmp_path: Path) -> None:
    first_dir, lib = tmp_path / "first", _library(tmp_path)
    first_dir.mkdir()
    assert _probe(tmp_path, [first_dir, lib])["mod"]["value"] == "one"
    assert _probe(tmp_path, [first_dir, lib])["mod"]["loader"] == "KeptLoader"

    # earlier on sys.path than the kept module's directory: the import system finds this one
    _write(first_dir / "mod.py", "VALUE = 'shadow'\n")
    shadowed = _probe(tmp_path, [first_dir, lib])
    assert shadowed["mod"]["value"] == "shadow"
    assert shadowed["mod"]["file"] == str(first_dir / "mod.py")
    # and a module added to a package's directory is seen the same way
    _write(lib / "pkg" / "sub" / "__init__.py", "VALUE = 'sub package'\n")
    assert _probe(tmp_path, [first_dir, lib])["pkg.sub"]["value"] == "sub package"


def test_a_removed_source_is_not_imported_from_what_was_kept(tmp_path: Path) -> None:
    lib = _library(tmp_path)
    _probe(tmp_path, [lib])
    (lib / "pkg" / "sub.py").unlink()
    script = tmp_path / "gone.py"
    script.write_text(
        f"import sys\nsys.path[1:1] = [{str(lib)!r}]\n"
        "from mermaid_cli.cli import kept_modules\n"
        f"kept_modules.install({str(tmp_path / 'kept')!r})\n"
        "try:\n    import pkg.sub\nexcept ModuleNotFoundError:\n    print('not found')\n"
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "not found", proc.stderr


def test_a_damaged_file_is_ignored_and_written_again(tmp_path: Path) -> None:
    lib = _library(tmp_path)
    _probe(tmp_path, [lib])
    (kept,) = _kept_files(tmp_path)
    for damage in (b"", b"garbage", kept.read_bytes()[:4] + b"\xff" * 64):
        kept.write_bytes(damage)
        assert {m["loader"] for m in _probe(tmp_path, [lib]).values()} == {"SourceFileLoader"}
        assert {m["loader"] for m in _probe(tmp_path, [lib]).values()} == {"KeptLoader"}


def test_a_damaged_entry_is_imported_the_usual_way(tmp_path: Path) -> None:
    import marshal

    lib = _library(tmp_path)
    _probe(tmp_path, [lib])
    (kept,) = _kept_files(tmp_path)
    data = kept.read_bytes()  # the magic number, the index's length, the index, the code
    length = int.from_bytes(data[4:12], "little")
    key, dirs, modules = marshal.loads(data[12 : 12 + length])
    body = data[12 + length :]
    origin, is_package, mtime, size, _offset, _length = modules["pkg.sub"]
    modules["mod"] = ("junk",)  # not an entry
    modules["pkg.sub"] = (origin, is_package, mtime, size, len(body), 99)  # code past the end
    index = marshal.dumps((key, dirs, modules))
    kept.write_bytes(data[:4] + len(index).to_bytes(8, "little") + index + body)
    damaged = _probe(tmp_path, [lib])
    assert damaged["mod"]["loader"] == "SourceFileLoader" and damaged["mod"]["value"] == "one"
    assert damaged["pkg.sub"]["value"] == "sub"  # its loader fell back to the source
    assert damaged["pkg"]["loader"] == "KeptLoader"


def test_each_sys_path_has_its_own_file_and_nothing_is_written_without_bytecode(tmp_path: Path) -> None:
    lib, other = _library(tmp_path), tmp_path / "other"
    other.mkdir()
    _probe(tmp_path, [lib], PYTHONDONTWRITEBYTECODE="1")
    assert _kept_files(tmp_path) == []
    _probe(tmp_path, [lib])
    _probe(tmp_path, [other, lib])
    assert len(_kept_files(tmp_path)) == 2
    assert _probe(tmp_path, [lib])["mod"]["loader"] == "KeptLoader"


def test_kept_files_beyond_the_limit_go_least_recently_written_first(tmp_path: Path) -> None:
    from mermaid_cli.cli import kept_modules

    lib = _library(tmp_path)
    tag = sys.implementation.cache_tag
    old = [
        tmp_path / "kept" / f"kept-modules.{tag}.{i:08x}.marshal" for i in range(kept_modules.MAX_FILES + 3)
    ]
    for i, path in enumerate(old):
        path.write_bytes(b"x")
        os.utime(path, ns=(i * 10**9, i * 10**9))
    other = tmp_path / "kept" / "kept-modules.another-python.00000000.marshal"
    other.write_bytes(b"x")
    _probe(tmp_path, [lib])  # writes this sys.path's file
    left = {p.name for p in (tmp_path / "kept").iterdir()}
    mine = [n for n in left if n not in {p.name for p in old} and n != other.name]
    assert len(mine) == 1  # the file just written stays
    # with it, the MAX_FILES - 1 most recently written of the others; another Python's is not ours
    assert left == {mine[0], other.name, *(p.name for p in old[-(kept_modules.MAX_FILES - 1) :])}


# imports `mod` and `pkg.sub` with kept modules installed and keeps them, mod's `.pyc` being
# rewritten (as a concurrent compile could) after the save checked it and before it reads it
REWRITTEN_PROBE = """
import sys
sys.path[1:1] = {lib_dirs!r}
from mermaid_cli.cli import kept_modules
kept_modules.install({kept!r})
import importlib.util, mod, pkg.sub
checked = kept_modules._newly_imported
def checked_then_rewritten(preloaded):
    found = checked(preloaded)
    with open(importlib.util.cache_from_source(mod.__file__), "ab") as pyc:
        pyc.write(b"more")
    return found
kept_modules._newly_imported = checked_then_rewritten
kept_modules.save()
"""


def test_a_bytecode_file_rewritten_after_its_check_keeps_nothing(tmp_path: Path) -> None:
    lib = _library(tmp_path)
    _run(tmp_path, REWRITTEN_PROBE, [lib])
    assert list((tmp_path / "kept").iterdir()) == []  # no kept file, no temp file left behind
    # (the import system recompiles the damaged `.pyc`; the next process keeps it again)
    assert {m["loader"] for m in _probe(tmp_path, [lib]).values()} == {"SourceFileLoader"}
    assert {m["loader"] for m in _probe(tmp_path, [lib]).values()} == {"KeptLoader"}


# imports 40 modules of ~50 KB of code each with kept modules installed, then reports the most
# memory Python held while it kept them
MEMORY_PROBE = """
import sys, tracemalloc
sys.path[1:1] = {lib_dirs!r}
from mermaid_cli.cli import kept_modules
kept_modules.install({kept!r})
import importlib
for i in range(40):
    importlib.import_module(f"big{{i}}")
import pathlib, mermaid_cli.core.cache_files  # (what save imports stays imported: not counted)
tracemalloc.start()
kept_modules.save()
print(tracemalloc.get_traced_memory()[1])
"""


def test_keeping_holds_one_module_at_a_time_not_the_whole_file(tmp_path: Path) -> None:
    lib = _library(tmp_path)
    body = "".join(f"def f{n}():\n    return {list(range(n * 40, n * 40 + 40))!r}\n" for n in range(150))
    for i in range(40):
        _write(lib / f"big{i}.py", f"# module {i}\n{body}", 1_700_000_000)
    peak = int(_run(tmp_path, MEMORY_PROBE, [lib]))
    (kept,) = _kept_files(tmp_path)
    largest_pyc = max(p.stat().st_size for p in (lib / "__pycache__").glob("big*.pyc"))
    assert kept.stat().st_size > 30 * largest_pyc  # the file holds them all...
    assert peak < 4 * largest_pyc + 200_000  # ...while the save held about one
