"""edit_file: one location, counted errors, the fuzzy ladder, non-UTF-8 and CRLF files."""

from __future__ import annotations

from pathlib import Path

import pytest

from mermaid_cli.tools.base import ToolContext
from mermaid_cli.tools.edit import EditFile
from mermaid_cli.tools.matching import find_text


@pytest.fixture
def seen() -> list:
    return []


@pytest.fixture
def ctx(tmp_path: Path, seen: list) -> ToolContext:
    return ToolContext(project_root=tmp_path, checkpoint=lambda paths, reason: seen.append((paths, reason)))


async def edit(ctx, path, target, replacement, **kw):
    return await EditFile().run(
        EditFile.Args(path=path, target_content=target, replacement_content=replacement, **kw), ctx
    )


async def test_exact_single_match(ctx, tmp_path, seen):
    f = tmp_path / "m.py"
    f.write_text("def a():\n    return 1\n\ndef b():\n    return 2\n")
    result = await edit(ctx, "m.py", "    return 2", "    return 3")
    assert not result.is_error
    assert result.content == "Edited m.py (1 location)"
    assert "fuzzy" not in result.metadata and result.metadata["files_changed"] == ["m.py"]
    assert f.read_text() == "def a():\n    return 1\n\ndef b():\n    return 3\n"
    assert seen == [([f.resolve()], "edit_file")]


async def test_zero_matches_names_the_count(ctx, tmp_path, seen):
    f = tmp_path / "m.py"
    f.write_text("x = 1\n")
    result = await edit(ctx, "m.py", "y = 2", "y = 3")
    assert result.is_error and "0 matches" in result.content
    assert f.read_text() == "x = 1\n" and seen == []


async def test_two_matches_name_the_count_unless_allowed(ctx, tmp_path, seen):
    f = tmp_path / "m.py"
    f.write_text("x = 1\ny = 2\nx = 1\n")
    result = await edit(ctx, "m.py", "x = 1", "x = 9")
    assert result.is_error and "matches 2 locations" in result.content and result.metadata["matches"] == 2
    assert f.read_text() == "x = 1\ny = 2\nx = 1\n" and seen == []
    result = await edit(ctx, "m.py", "x = 1", "x = 9", allow_multiple=True)
    assert not result.is_error and result.content == "Edited m.py (2 locations)"
    assert f.read_text() == "x = 9\ny = 2\nx = 9\n"


async def test_trailing_whitespace_match_is_fuzzy(ctx, tmp_path):
    f = tmp_path / "t.py"
    f.write_text("if x:   \n    go()\t\nend\n")
    result = await edit(ctx, "t.py", "if x:\n    go()", "if y:\n    stop()")
    assert not result.is_error and result.metadata["fuzzy"] is True
    assert result.metadata["match_level"] == "trailing_whitespace"
    assert "fuzzy" in result.content and "verify the result" in result.content
    assert f.read_text() == "if y:\n    stop()\nend\n"


async def test_full_trim_match(ctx, tmp_path):
    f = tmp_path / "t.py"
    f.write_text("class A:\n        def f(self):\n            pass\n")
    result = await edit(ctx, "t.py", "def f(self):\n    pass\n", "    def g(self):\n        return 1\n")
    assert result.metadata["fuzzy"] is True and result.metadata["match_level"] == "trim"
    assert f.read_text() == "class A:\n    def g(self):\n        return 1\n"


async def test_unicode_normalisation_match(ctx, tmp_path):
    f = tmp_path / "u.md"
    f.write_text("He said \u201chello\u201d \u2014 twice\u2026\nnext\n")
    result = await edit(ctx, "u.md", 'He said "hello" - twice...', "He said hi")
    assert not result.is_error and result.metadata["match_level"] == "unicode"
    assert f.read_text() == "He said hi\nnext\n"


async def test_fuzzy_levels_still_count_ambiguity(ctx, tmp_path):
    f = tmp_path / "d.py"
    f.write_text("  a = 1  \n\n    a = 1  \n")
    result = await edit(ctx, "d.py", "a = 1\n", "b\n")
    assert result.is_error and "2 locations" in result.content


async def test_non_utf8_file_keeps_its_other_bytes(ctx, tmp_path):
    f = tmp_path / "legacy.txt"
    original = b"caf\xe9 au lait\nprice: 10\n\xff\xfe end\n"
    f.write_bytes(original)
    result = await edit(ctx, "legacy.txt", "price: 10", "price: 12")
    assert not result.is_error
    assert f.read_bytes() == original.replace(b"price: 10", b"price: 12")
    result = await edit(ctx, "legacy.txt", "caf\u00e9", "coffee")
    assert result.is_error and "not valid UTF-8" in result.content


async def test_crlf_file_keeps_crlf(ctx, tmp_path):
    f = tmp_path / "w.txt"
    f.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = await edit(ctx, "w.txt", "one\ntwo\n", "uno\ndos\n")
    assert not result.is_error and "fuzzy" not in result.metadata
    assert f.read_bytes() == b"uno\r\ndos\r\nthree\r\n"


async def test_bad_inputs(ctx, tmp_path):
    assert "does not exist" in (await edit(ctx, "missing.txt", "a", "b")).content
    (tmp_path / "f.txt").write_text("a")
    assert "empty" in (await edit(ctx, "f.txt", "", "b")).content
    assert "identical" in (await edit(ctx, "f.txt", "a", "a")).content
    (tmp_path / "dir").mkdir()
    assert "directory" in (await edit(ctx, "dir", "a", "b")).content


def test_find_text_spans_exclude_the_last_newline_unless_asked():
    content = "a  \nb  \nc\n"
    m = find_text(content, "a\nb")
    assert m.level == "trailing_whitespace" and content[m.spans[0][0] : m.spans[0][1]] == "a  \nb  "
    m = find_text(content, "a\nb\n")
    assert content[m.spans[0][0] : m.spans[0][1]] == "a  \nb  \n"


# --- property: arbitrary bytes around the edit survive unchanged --------------------------------

import tempfile  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=100, deadline=None)
@given(before=st.binary(max_size=200), after=st.binary(max_size=200))
async def test_edit_preserves_arbitrary_bytes(before: bytes, after: bytes):
    marker = b"<<MERMAID-EDIT-MARKER>>"
    if marker in before + after or b"MARKER" in before + after:
        return
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "blob.dat"
        f.write_bytes(before + marker + after)
        result = await EditFile().run(
            EditFile.Args(path="blob.dat", target_content=marker.decode(), replacement_content="new"),
            ToolContext(project_root=Path(tmp)),
        )
        assert not result.is_error, result.content
        assert f.read_bytes() == before + b"new" + after


async def test_concurrent_edits_of_one_file_lose_nothing(tmp_path):
    """Calls of one turn run concurrently; a gate that awaits must not let a read go stale."""
    import asyncio

    from mermaid_cli.tools.apply_patch import ApplyPatch

    outside = tmp_path / "shared.txt"
    outside.write_text("".join(f"item {i}\n" for i in range(20)))
    project = tmp_path / "project"
    project.mkdir()

    async def gate(resolved, action):
        await asyncio.sleep(0.001 * (hash(resolved.path) % 3))
        return None

    ctx = ToolContext(project_root=project, external_access=gate)
    calls = [
        EditFile().run(
            EditFile.Args(path=str(outside), target_content=f"item {i}\n", replacement_content=f"done {i}\n"),
            ctx,
        )
        for i in range(0, 20, 2)
    ] + [
        ApplyPatch().run(
            ApplyPatch.Args(
                patch=f"*** Begin Patch\n*** Update File: {outside}\n@@\n-item {i}\n+done {i}\n*** End Patch"
            ),
            ctx,
        )
        for i in range(1, 20, 2)
    ]
    results = await asyncio.gather(*calls)
    assert all(not r.is_error for r in results), [r.content for r in results if r.is_error]
    assert outside.read_text() == "".join(f"done {i}\n" for i in range(20))


@pytest.mark.parametrize(
    ("original", "target", "replacement", "expected"),
    [
        # an LF file: CRLF in the model's arguments must not leak into it
        (b"one\ntwo\nthree\n", "one\r\ntwo", "uno\r\ndos", b"uno\ndos\nthree\n"),
        (b"one\ntwo\nthree\n", "two", "dos\r\nmore", b"one\ndos\nmore\nthree\n"),
        # a CRLF file: LF arguments are written as CRLF
        (b"one\r\ntwo\r\nthree\r\n", "two", "dos\nmore", b"one\r\ndos\r\nmore\r\nthree\r\n"),
        # a file without line breaks keeps the replacement as written
        (b"single", "single", "a\nb", b"a\nb"),
    ],
)
async def test_the_files_own_line_ending_wins(ctx, tmp_path, original, target, replacement, expected):
    f = tmp_path / "f.txt"
    f.write_bytes(original)
    out = await edit(ctx, "f.txt", target, replacement)
    assert not out.is_error, out.content
    assert f.read_bytes() == expected
