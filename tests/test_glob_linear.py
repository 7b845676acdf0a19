"""Glob and .gitignore patterns match in time linear in the path: a hostile `.gitignore` rule
(`*a*a*a*a*a*a*a*a*a*a*a*b`) or a model's `**/**/**/...` backtracked exponentially and hung the
walk past --timeout and SIGTERM (the regex holds the GIL). The linear regex means the same."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mermaid_cli.tools.gitignore import glob_pieces, translate

PATTERNS = st.lists(
    st.sampled_from(["a", "b", "*", "**", "?", "/", "**/", "[ab]", "{a,b}", ",", "{", "}", "\\a", "."]),
    max_size=10,
).map("".join)
PATHS = st.lists(st.sampled_from(["a", "b", "/", "a/", "ab", "."]), max_size=12).map("".join)


@settings(max_examples=3000, deadline=None)
@given(PATTERNS, PATHS, st.booleans(), st.booleans())
def test_the_linear_regex_matches_what_the_plain_one_does(
    pattern: str, path: str, anchored: bool, braces: bool
) -> None:
    plain = "".join(text for text, _ in glob_pieces(pattern, anchored=anchored, braces=braces))
    try:
        expected = re.match("^" + plain + "$", path, re.DOTALL) is not None
    except re.error:
        return
    assert (
        re.match("^" + translate(pattern, anchored=anchored, braces=braces) + "$", path, re.DOTALL)
        is not None
    ) == expected


def test_a_hostile_gitignore_and_glob_finish(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*a*a*a*a*a*a*a*a*a*a*a*b\n")
    (tmp_path / ("a" * 60)).write_text("x")
    deep = tmp_path.joinpath(*["a"] * 30)
    deep.mkdir(parents=True)
    (deep / "f.py").write_text("x")
    code = (
        "import sys; from mermaid_cli.tools.gitignore import walk_files, translate; import re\n"
        "files = [rel for rel, _ in walk_files(sys.argv[1])]\n"
        "deep = re.compile('^' + translate('**/' * 12 + 'zz', anchored=True, braces=True) + '$', re.DOTALL)\n"
        "print(len(files), [rel for rel in files if deep.match(rel)])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "[]"]
