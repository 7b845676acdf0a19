"""apply_patch: the envelope, unified diffs, fuzzy context, all-or-nothing on a bad hunk."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mermaid_cli.tools.apply_patch import ApplyPatch
from mermaid_cli.tools.base import ToolContext
from mermaid_cli.tools.patch import PatchError, apply_hunks, parse_patch


@pytest.fixture
def seen() -> list:
    return []


@pytest.fixture
def ctx(tmp_path: Path, seen: list) -> ToolContext:
    return ToolContext(
        project_root=tmp_path, checkpoint=lambda paths, reason: seen.append((sorted(paths), reason))
    )


async def patch(ctx, text):
    return await ApplyPatch().run(ApplyPatch.Args(patch=text), ctx)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


async def test_envelope_add_update_delete_move(ctx, tmp_path, seen):
    (tmp_path / "app.py").write_text("import os\n\ndef main():\n    print('a')\n    return 0\n")
    (tmp_path / "old.txt").write_text("bye\n")
    (tmp_path / "mv.txt").write_text("keep\nthis\n")
    result = await patch(
        ctx,
        """*** Begin Patch
*** Add File: docs/new.md
+# Title
+body
*** Update File: app.py
@@ def main():
     print('a')
-    return 0
+    print('b')
+    return 1
*** Delete File: old.txt
*** Update File: mv.txt
*** Move to: moved/mv.txt
@@
 keep
-this
+that
*** End Patch
""",
    )
    assert not result.is_error, result.content
    assert result.content.splitlines() == [
        "Applied patch: 4 file(s)",
        "A docs/new.md",
        "M app.py",
        "D old.txt",
        "R mv.txt -> moved/mv.txt",
    ]
    assert "fuzzy" not in result.metadata
    assert tree(tmp_path) == {
        "app.py": b"import os\n\ndef main():\n    print('a')\n    print('b')\n    return 1\n",
        "docs/new.md": b"# Title\nbody\n",
        "moved/mv.txt": b"keep\nthat\n",
    }
    assert sorted(result.metadata["files_changed"]) == [
        "app.py",
        "docs/new.md",
        "moved/mv.txt",
        "mv.txt",
        "old.txt",
    ]
    assert len(seen) == 1 and seen[0][1] == "apply_patch" and len(seen[0][0]) == 5  # one checkpoint


async def test_unified_diff_multi_file_with_dev_null(ctx, tmp_path):
    (tmp_path / "a.txt").write_text("1\n2\n3\n4\n5\n6\n7\n8\n")
    (tmp_path / "gone.txt").write_text("x\ny\n")
    result = await patch(
        ctx,
        """diff --git a/a.txt b/a.txt
index 123..456 100644
--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,3 @@
 1
-2
+two
 3
@@ -6,3 +6,4 @@
 6
 7
+7.5
 8
diff --git a/new.txt b/new.txt
new file mode 100644
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+hello
+world
--- a/gone.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-x
-y
""",
    )
    assert not result.is_error, result.content
    assert result.content.splitlines() == ["Applied patch: 3 file(s)", "M a.txt", "A new.txt", "D gone.txt"]
    assert tree(tmp_path) == {"a.txt": b"1\ntwo\n3\n4\n5\n6\n7\n7.5\n8\n", "new.txt": b"hello\nworld\n"}


async def test_bad_hunk_leaves_every_file_untouched(ctx, tmp_path, seen):
    (tmp_path / "one.txt").write_text("alpha\nbeta\n")
    (tmp_path / "two.txt").write_text("gamma\ndelta\n")
    before = tree(tmp_path)
    result = await patch(
        ctx,
        """*** Begin Patch
*** Update File: one.txt
@@
-alpha
+ALPHA
*** Add File: three.txt
+new
*** Update File: two.txt
@@
 gamma
-delta
+DELTA
@@
-no such line
+whatever
*** End Patch""",
    )
    assert result.is_error
    assert "two.txt" in result.content and "hunk 2" in result.content and "no such line" in result.content
    assert "no file was changed" in result.content
    assert tree(tmp_path) == before and seen == []


async def test_fuzzy_context_is_reported(ctx, tmp_path):
    (tmp_path / "f.py").write_text("def f():   \n    x = 1  \n    return x\n")
    result = await patch(
        ctx, "*** Begin Patch\n*** Update File: f.py\n@@\n def f():\n-    x = 1\n+    x = 2\n*** End Patch\n"
    )
    assert not result.is_error and result.metadata["fuzzy"] is True and "fuzzy" in result.content
    assert (tmp_path / "f.py").read_text() == "def f():   \n    x = 2\n    return x\n"


async def test_end_of_file_hunk_prefers_the_end(ctx, tmp_path):
    (tmp_path / "f.txt").write_text("end\nmiddle\nend\n")
    result = await patch(
        ctx, "*** Begin Patch\n*** Update File: f.txt\n@@\n-end\n+END\n*** End of File\n*** End Patch\n"
    )
    assert not result.is_error and (tmp_path / "f.txt").read_text() == "end\nmiddle\nEND\n"


async def test_add_existing_and_update_missing_are_errors(ctx, tmp_path):
    (tmp_path / "x.txt").write_text("x\n")
    result = await patch(ctx, "*** Begin Patch\n*** Add File: x.txt\n+y\n*** End Patch\n")
    assert result.is_error and "already exists" in result.content
    result = await patch(ctx, "*** Begin Patch\n*** Update File: nope.txt\n@@\n-a\n+b\n*** End Patch\n")
    assert result.is_error and "does not exist" in result.content
    assert (tmp_path / "x.txt").read_text() == "x\n"


async def test_not_a_patch_and_escapes(ctx, tmp_path):
    result = await patch(ctx, "please change foo to bar")
    assert result.is_error and "not a patch" in result.content
    result = await patch(ctx, "*** Begin Patch\n*** Add File: ../evil.txt\n+x\n*** End Patch\n")
    assert result.is_error and "outside the project" in result.content
    assert not (tmp_path.parent / "evil.txt").exists()


async def test_git_diff_round_trip_with_no_newline_at_end(ctx, tmp_path):
    """A diff produced by git itself applies and reproduces the new file byte for byte."""
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    old = "".join(f"line {i}\n" for i in range(40)) + "tail without newline"
    new = (
        old.replace("line 3\n", "line three\n")
        .replace("line 30\n", "")
        .replace("tail without newline", "tail\n")
    )
    (a / "f.txt").write_text(old)
    (b / "f.txt").write_text(new)
    diff = subprocess.run(
        ["git", "diff", "--no-index", "--no-color", "a/f.txt", "b/f.txt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    ).stdout
    assert "No newline at end of file" in diff
    (tmp_path / "f.txt").write_text(old)
    work = ToolContext(project_root=tmp_path)
    result = await patch(work, diff.replace("a/a/f.txt", "a/f.txt").replace("b/b/f.txt", "b/f.txt"))
    assert not result.is_error, result.content
    assert (tmp_path / "f.txt").read_text() == new


def test_crlf_file_stays_crlf():
    ops = parse_patch("*** Begin Patch\n*** Update File: w.txt\n@@\n a\n-b\n+B\n*** End Patch")
    text, fuzzy = apply_hunks("a\r\nb\r\nc\r\n", ops[0].hunks, "w.txt")
    assert text == "a\r\nB\r\nc\r\n" and not fuzzy


def test_hint_picks_the_nearest_of_several_matches():
    content = "".join("x\n" if i % 10 == 0 else f"{i}\n" for i in range(100))
    ops = parse_patch("--- a/f\n+++ b/f\n@@ -51,1 +51,1 @@\n-x\n+X\n")
    text, _ = apply_hunks(content, ops[0].hunks, "f")
    assert text.splitlines()[50] == "X" and text.count("X") == 1


def test_truncated_unified_hunk_is_a_parse_error():
    with pytest.raises(PatchError, match="truncated"):
        parse_patch("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n")


# --- property: any difflib unified diff applies back exactly -----------------------------------

import difflib  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

LINE = st.sampled_from(["", "a", "b", "c", "  x = 1", "return", "}", "{", "foo()", "# note"])


@settings(max_examples=200, deadline=None)
@given(
    old=st.lists(LINE, max_size=40),
    edits=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 3), st.lists(LINE, max_size=3)), max_size=5),
    context=st.integers(0, 3),
)
def test_difflib_diffs_apply_exactly(old, edits, context):
    new = list(old)
    for at, remove, insert in edits:
        at = min(at, len(new))
        new[at : at + remove] = insert
    a = "".join(line + "\n" for line in old)
    b = "".join(line + "\n" for line in new)
    diff = "".join(
        difflib.unified_diff(a.splitlines(True), b.splitlines(True), "a/f.txt", "b/f.txt", n=context)
    )
    if not diff:
        return
    ops = parse_patch(diff)
    assert len(ops) == 1 and ops[0].kind == "update"
    text, _fuzzy = apply_hunks(a, ops[0].hunks, "f.txt")
    assert text == b


def test_mixed_line_endings_are_kept_per_line():
    ops = parse_patch("*** Begin Patch\n*** Update File: m.txt\n@@\n a\n-b\n+B\n+B2\n c\n*** End Patch")
    text, fuzzy = apply_hunks("a\r\nb\nc\r\nd\n", ops[0].hunks, "m.txt")
    assert text == "a\r\nB\nB2\nc\r\nd\n" and not fuzzy


def test_repeated_context_lines_follow_the_hunk_line_number():
    # found by hypothesis: with identical lines, the match must be where the diff header says
    from mermaid_cli.tools.patch import apply_hunks, parse_patch

    diff = "--- a/x\n+++ b/x\n@@ -2,2 +2,3 @@\n b\n b\n+\n"
    assert apply_hunks("b\nb\nb\n", parse_patch(diff)[0].hunks, "x")[0] == "b\nb\nb\n\n"


async def test_a_link_updated_first_is_still_not_deleted_through(ctx, tmp_path):
    """`Update File: link` then `Delete File: link` deleted the link's target: the second section
    was keyed by the followed path and skipped the symlink check the first had passed."""
    (tmp_path / "target.txt").write_text("line1\n")
    (tmp_path / "link").symlink_to("target.txt")
    result = await patch(
        ctx,
        "*** Begin Patch\n*** Update File: link\n@@\n-line1\n+line2\n*** Delete File: link\n*** End Patch",
    )
    assert result.is_error and "symbolic link" in result.content
    assert (tmp_path / "target.txt").read_text() == "line1\n" and (tmp_path / "link").is_symlink()
