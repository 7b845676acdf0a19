"""The kept code of dataclasses and named tuples (`cli.generated_code`): a class made from kept
code is the class compiling would make, and a bad cache file is only a cache miss."""

from __future__ import annotations
import __future__

import collections
import dataclasses
import importlib.util
import marshal
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from mermaid_cli.cli.generated_code import GeneratedCode


def _make_classes() -> tuple[type, type]:
    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: int = 0
        tags: list[str] = dataclasses.field(default_factory=list, hash=False)

    Pair = collections.namedtuple("Pair", "left right")
    return Point, Pair


def _with(code: GeneratedCode, monkeypatch: pytest.MonkeyPatch) -> tuple[type, type]:
    with monkeypatch.context() as m:
        m.setattr(dataclasses, "exec", code.exec, raising=False)
        m.setattr(collections, "eval", code.eval, raising=False)
        return _make_classes()


def test_a_string_annotation_compiles_once_and_evaluates_the_same(tmp_path: Path, monkeypatch) -> None:
    code = GeneratedCode(tmp_path / "generated.marshal")
    monkeypatch.setattr(typing, "compile", code.compile, raising=False)
    first, second = typing.ForwardRef("dict[str, int] | None"), typing.ForwardRef("dict[str, int] | None")
    assert first.__forward_code__ is second.__forward_code__ and code.added == 1
    assert typing.get_type_hints(type("C", (), {"__annotations__": {"a": "dict[str, int] | None"}})) == {
        "a": dict[str, int] | None
    }
    with pytest.raises(SyntaxError):
        typing.ForwardRef("not valid (")


def test_classes_from_kept_code_are_the_classes_compiling_makes(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "generated.marshal"
    first = GeneratedCode(path)
    _with(first, monkeypatch)
    assert first.added > 0
    first.save()
    second = GeneratedCode(path)
    Point, Pair = _with(second, monkeypatch)
    assert second.added == 0  # every function came from the file, nothing was compiled
    Plain, PlainPair = _make_classes()
    for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
        ours, theirs = getattr(Point, name).__code__, getattr(Plain, name).__code__
        assert (ours.co_code, ours.co_flags) == (theirs.co_code, theirs.co_flags), name
    # compiled as dataclasses compiles it, not under generated_code's `annotations` (which gave
    # {"x": "_type_x", ...}: the names of the values the generated function closes over)
    assert Point.__init__.__annotations__ == Plain.__init__.__annotations__
    assert Point.__init__.__annotations__["x"] == "int"  # (this module's own string annotation)
    assert Pair.__new__.__code__.co_flags == PlainPair.__new__.__code__.co_flags
    p = Point(1, tags=["a"])
    assert (p, repr(p), hash(p)) == (
        Point(1, 0, ["a"]),
        "_make_classes.<locals>.Point(x=1, y=0, tags=['a'])",
        hash(Point(1, 0, ["a"])),
    )
    assert Point(1).tags is not Point(1).tags  # the default factory still runs per instance
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 2  # type: ignore[misc]
    assert Pair(1, right=2) == PlainPair(1, 2) == (1, 2)


@pytest.mark.parametrize(
    "content",
    [b"", b"junk", b"\x00\x00\x00\x00" + marshal.dumps({}), marshal.dumps([1, 2])],
    ids=["empty", "junk", "another-python", "not-a-dict"],
)
def test_a_bad_cache_file_is_a_miss(tmp_path: Path, monkeypatch, content: bytes) -> None:
    path = tmp_path / "generated.marshal"
    path.write_bytes(content)
    code = GeneratedCode(path)
    assert code.kept == {}
    Point, _ = _with(code, monkeypatch)
    assert Point(3).x == 3


def test_runs_and_other_commands_keep_their_code_apart() -> None:
    from mermaid_cli.cli.generated_code import CACHE, kept_file

    run = kept_file(["exec", "--json", "go"])
    assert run == kept_file(["run", "go"]) and run.parent == CACHE
    others = {kept_file(argv) for argv in (["sessions", "list"], ["--version"], [], ["exec.."], ["../exec"])}
    assert len(others) == 1 and run not in others
    assert all(path.parent == CACHE for path in others)  # (nothing from the command line in the name)


def test_an_unwritable_place_costs_nothing_but_the_saving(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    code = GeneratedCode(blocker / "sub" / "generated.marshal")  # a directory under a file
    _with(code, monkeypatch)
    code.save()  # no error
    assert not (blocker / "sub").exists()


def test_a_save_removes_the_former_single_file_beside_it(tmp_path: Path, monkeypatch) -> None:
    from mermaid_cli.cli.generated_code import FORMER_FILE

    former = tmp_path / FORMER_FILE
    former.write_bytes(b"every command's code, from before the split")
    untouched = GeneratedCode(tmp_path / "generated-code.other.marshal")
    untouched.save()  # nothing compiled, nothing written: the old file stays
    assert former.exists()
    code = GeneratedCode(tmp_path / "generated-code.run.marshal")
    _with(code, monkeypatch)
    code.save()
    assert (tmp_path / "generated-code.run.marshal").exists() and not former.exists()
    # a file kept under that very name (a caller's choice) is never the one removed
    same = GeneratedCode(former)
    _with(same, monkeypatch)
    same.save()
    assert former.exists() and GeneratedCode(former).kept


def test_a_save_keeps_its_own_entries_then_the_most_recently_kept_up_to_the_bound(
    tmp_path: Path, monkeypatch
) -> None:
    from mermaid_cli.cli import generated_code

    older = {("eval", f"{n} + 1"): marshal.dumps(compile(f"{n} + 1", "<string>", "eval")) for n in range(30)}
    path = tmp_path / "generated.marshal"
    _ship(path, older)  # (the same layout as a kept file)
    monkeypatch.setattr(generated_code, "MAX_KEPT", 12)
    code = GeneratedCode(path)
    code.eval("29 + 1")  # one kept entry used again
    _with(code, monkeypatch)  # and a few compiled here
    assert code.added > 0
    code.save()
    kept = list(GeneratedCode(path).kept)
    ours = list(code.used)
    assert ("eval", "29 + 1") in ours and len(ours) < 12
    # this process's entries first, in the order it used them, then the earlier file's in its order
    assert kept == ours + [key for key in older if key not in ours][: 12 - len(ours)]

    # a save that writes nothing leaves the file as it is; one whose own entries pass the bound
    # still keeps all of them
    GeneratedCode(path).save()
    assert list(GeneratedCode(path).kept) == kept
    monkeypatch.setattr(generated_code, "MAX_KEPT", 2)
    again = GeneratedCode(path)
    again.eval("100 + 1")
    again.save()
    assert list(GeneratedCode(path).kept) == [("eval", "100 + 1")] + kept[:1]


def test_the_entry_point_keeps_the_code_for_the_next_process(tmp_path: Path) -> None:
    script = (
        "import sys; from pathlib import Path; from mermaid_cli.cli import generated_code as g;"
        "c = g.install(Path(sys.argv[1])); import dataclasses;"
        "dataclasses.dataclass(type('K', (), {'__annotations__': {'a': 'int'}}));"
        "import re; assert re.compile(r'(?P<k>kept) +regex').match('kept  regex');"
        "print(c.added)"
    )
    path = tmp_path / "generated.marshal"
    runs = [
        subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True)
        for _ in "12"
    ]
    assert [r.returncode for r in runs] == [0, 0], runs
    assert int(runs[0].stdout) > 0 and int(runs[1].stdout) == 0  # saved at exit, used by the next


def test_an_entry_that_is_not_code_is_compiled_again(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "generated.marshal"
    first = GeneratedCode(path)
    _with(first, monkeypatch)
    first.save()
    spoiled = GeneratedCode(path)
    for key in list(spoiled.kept):
        spoiled.kept[key] = marshal.dumps(42) if len(key[1]) % 2 else b"\xff"
    Point, Pair = _with(spoiled, monkeypatch)
    assert spoiled.added == len(spoiled.kept) > 0  # every entry compiled afresh
    assert Point(1, 2) == Point(1, 2) and Pair(1, 2).right == 2


def test_code_kept_with_string_annotations_is_compiled_again(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "generated.marshal"
    first = GeneratedCode(path)
    _with(first, monkeypatch)
    first.save()
    stale = GeneratedCode(path)  # as an earlier version kept it: compiled under `annotations`
    for mode, source in list(stale.kept):
        stale.kept[mode, source] = marshal.dumps(
            compile(source, "<string>", mode, flags=__future__.annotations.compiler_flag)
        )
    Point, _ = _with(stale, monkeypatch)
    assert stale.added == len(stale.kept) > 0
    assert Point.__init__.__annotations__ == _make_classes()[0].__init__.__annotations__


PATTERNS: list[tuple[str | bytes, int]] = [
    (r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=", 0),
    (r"(?P<word>\w+)\s*(?:=|:)\s*(\d{2,}|[a-f]+)$", re.IGNORECASE),
    (r"([A-Za-z_:.][\w:.]*)\(\)\{\1\|\1&?\}?;?\1?", 0),  # a backreference
    (r"(?<=@)\w+(?!\.)", re.MULTILINE | re.DOTALL),
    (
        r"""(?x) \d+  # digits
         [.,]? \d*""",
        0,
    ),
    (r"straße|ǅ", re.IGNORECASE | re.UNICODE),
    (rb"\x00[\x80-\xff]+", 0),
    (rb"(?i)ab(?P<n>c)", 0),
    (r"", 0),
]


def test_a_pattern_from_kept_arguments_is_the_pattern_re_compiles(tmp_path: Path) -> None:
    from mermaid_cli.cli.generated_code import _compile_regex  # re's own, whatever is installed

    path = tmp_path / "generated.marshal"
    first = GeneratedCode(path)
    made = [first.compile_regex(p, f) for p, f in PATTERNS]
    assert first.added == len(PATTERNS)
    first.save()
    second = GeneratedCode(path)
    kept = [second.compile_regex(p, f) for p, f in PATTERNS]
    assert second.added == 0  # every program came from the file
    for (pattern, flags), a, b in zip(PATTERNS, made, kept, strict=True):
        plain = _compile_regex(pattern, flags)
        # equal patterns: same pattern, flags and program (CPython compares the code)
        assert a == plain and b == plain, pattern
        assert (b.groups, b.groupindex, b.flags) == (plain.groups, plain.groupindex, plain.flags)
    word = kept[1].match("Key = ff")
    assert word is not None and word.group("word") == "Key" and word.group(2) == "ff"
    assert kept[6].search(b"a\x00\x90\xff") is not None


def test_a_spoiled_regex_entry_or_a_debug_compile_is_compiled_by_re(tmp_path: Path, capsys) -> None:
    path = tmp_path / "generated.marshal"
    first = GeneratedCode(path)
    first.compile_regex(r"a(b)c", 0)
    first.save()
    spoiled = GeneratedCode(path)
    for key in list(spoiled.kept):
        spoiled.kept[key] = marshal.dumps((1, ["x"], 0, {}, ()))  # not a program
    assert spoiled.compile_regex(r"a(b)c", 0).match("abc").group(1) == "b" and spoiled.added == 1
    debug = spoiled.compile_regex(r"z", re.DEBUG)
    assert debug.match("z") and "LITERAL" in capsys.readouterr().out and spoiled.added == 1


def _ship(path: Path, entries: dict[tuple[str, str], bytes]) -> None:
    path.write_bytes(importlib.util.MAGIC_NUMBER + marshal.dumps(entries))


def test_a_first_run_takes_the_shipped_code_and_keeps_what_it_used(tmp_path: Path, monkeypatch) -> None:
    built = GeneratedCode(tmp_path / "built.marshal")
    _with(built, monkeypatch)
    unused = ("eval", "unused + 1")
    _ship(
        tmp_path / "shipped.marshal", {**built.kept, unused: marshal.dumps(compile("0", "<string>", "eval"))}
    )

    local = tmp_path / "local.marshal"
    first = GeneratedCode(local, tmp_path / "shipped.marshal")
    Point, Pair = _with(first, monkeypatch)
    assert first.added == 0 and first.from_shipped  # nothing compiled: all of it was shipped
    assert Point(1, 2) == Point(1, 2) and Pair(1, 2).right == 2
    first.save()
    second = GeneratedCode(local, tmp_path / "shipped.marshal")
    assert set(second.kept) == set(built.kept)  # its own file, with what the first run used only
    _with(second, monkeypatch)
    assert second.added == 0 and not second.from_shipped


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"junk",
        importlib.util.MAGIC_NUMBER + b"\xff\x00",
        importlib.util.MAGIC_NUMBER + marshal.dumps([1]),
    ],
    ids=["empty", "junk", "bad-marshal", "not-a-dict"],
)
def test_a_bad_shipped_file_is_a_miss(tmp_path: Path, monkeypatch, content: bytes) -> None:
    (tmp_path / "shipped.marshal").write_bytes(content)
    code = GeneratedCode(tmp_path / "local.marshal", tmp_path / "shipped.marshal")
    Point, _ = _with(code, monkeypatch)
    assert Point(3).x == 3 and code.added > 0 and not code.from_shipped


def test_the_shipped_code_holds_what_importing_the_package_compiles() -> None:
    """`python -m mermaid_cli.cli.shipped` writes it; a new or changed dataclass, named tuple,
    string annotation or pattern of the package fails this until it is run again."""
    from pydantic.version import VERSION

    from mermaid_cli.cli import shipped
    from mermaid_cli.cli.generated_code import SHIPPED, _load

    if not SHIPPED.exists():
        pytest.skip(f"no generated code is shipped for {sys.implementation.cache_tag}")
    if shipped.built_with(SHIPPED) != shipped.built_by(VERSION):
        pytest.skip(f"shipped with {shipped.built_with(SHIPPED)}, this is {shipped.built_by(VERSION)}")
    missing = set(shipped.collect_generated_code()) - set(_load(SHIPPED))
    assert not missing, (
        f"{SHIPPED.name} is stale: run `python -m mermaid_cli.cli.shipped` ({len(missing)} missing)"
    )
