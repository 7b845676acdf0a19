"""glob and grep: .gitignore semantics, .git skipped, caps, and rg / Python giving the same output."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mermaid_cli.tools.base import ToolContext
from mermaid_cli.tools.gitignore import walk_files
from mermaid_cli.tools.search import Glob, Grep

RG = shutil.which("rg")


def make_tree(root: Path) -> None:
    files = {
        ".gitignore": "*.log\n/build/\ndist\n!keep.log\nnode_modules/\n**/generated/**\ndocs/*.tmp\n",
        "app.py": "import os\nTODO = 'root'\n",
        "keep.log": "TODO keep me\n",
        "debug.log": "TODO ignored\n",
        "build/out.py": "TODO build\n",
        "src/build/inner.py": "TODO not anchored so kept\n",
        "src/dist": "TODO dist file ignored everywhere\n",
        "src/mod.py": "def f():\n    # todo lower\n    return 'TODO'\n",
        "src/.gitignore": "secret_*.py\n!secret_ok.py\n",
        "src/secret_a.py": "TODO hidden by nested\n",
        "src/secret_ok.py": "TODO re-included\n",
        "src/generated/x/y.py": "TODO generated\n",
        "docs/a.tmp": "TODO tmp\n",
        "docs/sub/b.tmp": "TODO deeper tmp kept\n",
        "docs/readme.md": "Nothing\nTODO: write docs\n",
        "node_modules/pkg/index.js": "TODO vendored\n",
        ".github/ci.yml": "# TODO hidden dirs are searched\n",
        ".git/HEAD": "TODO never\n",
        "web/app.ts": "const TODO = 1;\n",
        "web/app.tsx": "const x = 'TODO';\n",
    }
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


EXPECTED_FILES = [
    ".github/ci.yml",
    ".gitignore",
    "app.py",
    "docs/readme.md",
    "docs/sub/b.tmp",
    "keep.log",
    "src/.gitignore",
    "src/build/inner.py",
    "src/mod.py",
    "src/secret_ok.py",
    "web/app.ts",
    "web/app.tsx",
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    make_tree(tmp_path)
    return tmp_path


def test_walker_honours_gitignore_subset(root):
    assert sorted(rel for rel, _ in walk_files(str(root))) == EXPECTED_FILES


async def test_glob_patterns(root):
    ctx = ToolContext(project_root=root)

    async def glob(pattern, **kw):
        return await Glob().run(Glob.Args(pattern=pattern, **kw), ctx)

    assert (await glob("*.py")).content.splitlines() == [
        "app.py",
        "src/build/inner.py",
        "src/mod.py",
        "src/secret_ok.py",
    ]
    assert (await glob("src/*.py")).content.splitlines() == ["src/mod.py", "src/secret_ok.py"]
    assert (await glob(f"{root}/src/*.py")).content.splitlines() == ["src/mod.py", "src/secret_ok.py"]
    assert (await glob("**/*.py")).content.splitlines() == [
        "app.py",
        "src/build/inner.py",
        "src/mod.py",
        "src/secret_ok.py",
    ]
    assert (await glob("web/*.{ts,tsx}")).content.splitlines() == ["web/app.ts", "web/app.tsx"]
    assert (await glob("docs/**")).content.splitlines() == ["docs/readme.md", "docs/sub/b.tmp"]
    empty = await glob("*.rs")
    assert not empty.is_error and "no files match" in empty.content
    assert (await glob("../*")).is_error


async def test_glob_cap_is_said(tmp_path):
    for i in range(250):
        (tmp_path / f"f{i:03}.txt").write_text("")
    result = await Glob().run(Glob.Args(pattern="*.txt"), ToolContext(project_root=tmp_path))
    lines = result.content.splitlines()
    assert len(lines) == 201 and "capped at 200 paths" in lines[-1] and result.metadata["capped"]
    result = await Glob().run(Glob.Args(pattern="*.txt", limit=5), ToolContext(project_root=tmp_path))
    assert result.content.splitlines()[:5] == [f"f{i:03}.txt" for i in range(5)]


def python_ctx(root: Path) -> ToolContext:
    return ToolContext(project_root=root, grep_backend="python")


async def test_python_grep_output_format(root):
    result = await Grep().run(Grep.Args(pattern="TODO"), python_ctx(root))
    assert result.metadata["backend"] == "python"
    assert result.content.splitlines() == [
        ".github/ci.yml:1: # TODO hidden dirs are searched",
        "app.py:2: TODO = 'root'",
        "docs/readme.md:2: TODO: write docs",
        "docs/sub/b.tmp:1: TODO deeper tmp kept",
        "keep.log:1: TODO keep me",
        "src/build/inner.py:1: TODO not anchored so kept",
        "src/mod.py:3:     return 'TODO'",
        "src/secret_ok.py:1: TODO re-included",
        "web/app.ts:1: const TODO = 1;",
        "web/app.tsx:1: const x = 'TODO';",
    ]
    result = await Grep().run(
        Grep.Args(pattern="todo", include="src/*.py", ignore_case=True), python_ctx(root)
    )
    assert result.content.splitlines() == [
        "src/mod.py:2:     # todo lower",
        "src/mod.py:3:     return 'TODO'",
        "src/secret_ok.py:1: TODO re-included",
    ]
    result = await Grep().run(Grep.Args(pattern="nothing-here"), python_ctx(root))
    assert not result.is_error and "no matches" in result.content
    result = await Grep().run(Grep.Args(pattern="(unclosed"), python_ctx(root))
    assert result.is_error and "bad regular expression" in result.content


async def test_grep_caps_at_200_hits(tmp_path):
    (tmp_path / "many.txt").write_text("hit\n" * 300)
    result = await Grep().run(Grep.Args(pattern="hit"), python_ctx(tmp_path))
    lines = result.content.splitlines()
    assert len(lines) == 201 and lines[199] == "many.txt:200: hit" and "capped at 200 matches" in lines[-1]


CASES = [
    ("TODO", None, False),
    ("todo", None, True),
    (r"^\s+return", None, False),
    ("TODO", "*.py", False),
    ("TODO", "web/*.ts", False),
    ("TODO", "*.{ts,tsx}", False),
    ("hit", None, False),
    ("x", None, False),
]


@pytest.mark.skipif(RG is None, reason="ripgrep (rg) is not installed; apt-get install -y ripgrep")
@pytest.mark.parametrize(("pattern", "include", "ignore_case"), CASES)
async def test_rg_and_python_give_the_same_output(root, pattern, include, ignore_case):
    (root / "many.txt").write_text("hit\n" * 300)
    (root / "crlf.txt").write_bytes(b"x = 1\r\ny = 2\r\n")
    (root / "link.py").symlink_to(root / "app.py")
    (root / "bin.dat").write_bytes(b"TODO\x00x")
    args = Grep.Args(pattern=pattern, include=include, ignore_case=ignore_case)
    by_rg = await Grep().run(args, ToolContext(project_root=root))
    by_py = await Grep().run(args, python_ctx(root))
    assert by_rg.metadata["backend"] == "rg" and by_py.metadata["backend"] == "python"
    assert by_rg.content == by_py.content
    assert by_rg.summary == by_py.summary


@pytest.mark.skipif(RG is None, reason="ripgrep (rg) is not installed; apt-get install -y ripgrep")
async def test_pattern_rg_cannot_parse_falls_back_to_python(root):
    result = await Grep().run(Grep.Args(pattern=r"TODO(?= =)"), ToolContext(project_root=root))
    assert not result.is_error and result.metadata["backend"] == "python"
    assert result.content == "app.py:2: TODO = 'root'\nweb/app.ts:1: const TODO = 1;"


# --- property: the walker agrees with git itself ---------------------------------------------

import os  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

GIT = shutil.which("git")
PATTERNS = [
    "*.log",
    "/build/",
    "build",
    "dist/",
    "**/gen/**",
    "docs/*.tmp",
    "!keep.log",
    "a/**/b",
    "*.py",
    "!src/*.py",
    "src/",
    "?.txt",
    "[ab].md",
    "x/",
    "**/cache",
    "sub/**",
    "!sub/keep.txt",
    "/top.txt",
    "*.t[xm]*",
    "a/b/",
    "!*.md",
    "doc",
    "gen",
    "!gen/",
    "\\#hash",
    "trailing.txt   ",
]
FILES = [
    "keep.log",
    "debug.log",
    "build/o.py",
    "src/build/i.py",
    "dist/d.js",
    "src/dist/e.js",
    "a.txt",
    "ab.txt",
    "a.md",
    "b.md",
    "c.md",
    "docs/x.tmp",
    "docs/y/z.tmp",
    "src/main.py",
    "src/lib/u.py",
    "a/b/c.txt",
    "a/x/b/d.txt",
    "a/b",
    "x/y.txt",
    "y/x/z.txt",
    "gen/g.txt",
    "q/gen/h.txt",
    "q/gen/r/s.txt",
    "cache/c1",
    "deep/er/cache/c2",
    "sub/keep.txt",
    "sub/drop.txt",
    "top.txt",
    "nested/top.txt",
    "#hash",
    "trailing.txt",
    "doc/readme",
    "docs/readme",
]


@pytest.mark.skipif(GIT is None, reason="git is not installed")
@settings(max_examples=60, deadline=None)
@given(
    root_rules=st.lists(st.sampled_from(PATTERNS), max_size=6),
    nested_rules=st.lists(st.sampled_from(PATTERNS), max_size=3),
    nested_dir=st.sampled_from(["src", "a", "q", "sub", "docs"]),
    files=st.sets(st.sampled_from(FILES), min_size=1, max_size=20),
)
def test_walker_agrees_with_git(root_rules, nested_rules, nested_dir, files):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel in files:
            p = root / rel
            if any(parent.is_file() for parent in [root / q for q in Path(rel).parents if str(q) != "."]):
                continue
            if p.exists():
                continue
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text("x\n")
        (root / ".gitignore").write_text("\n".join(root_rules) + "\n")
        if (root / nested_dir).is_dir():
            (root / nested_dir / ".gitignore").write_text("\n".join(nested_rules) + "\n")
        env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
        out = subprocess.run(
            ["git", "ls-files", "-o", "--exclude-standard", "-z"],
            cwd=root,
            check=True,
            env=env,
            capture_output=True,
        ).stdout.decode()
        by_git = sorted(p for p in out.split("\0") if p)
        ours = sorted(rel for rel, _ in walk_files(str(root)))
        assert ours == by_git


@pytest.mark.parametrize("pattern", [r"(?=a)(a+)+$", r"(\w+\s?)+$", r"a*a*a*a*a*a*a*b"])
async def test_a_regex_python_could_run_for_ever_on_is_refused(tmp_path, pattern):
    """Python's engine holds the GIL through a match: `(?=a)(a+)+$` against a line of `a`s hung the
    run past --timeout and SIGTERM. rg (linear) runs what it can; the Python walker refuses these."""
    (tmp_path / "f.txt").write_text("a" * 40 + "!\n")
    result = await Grep().run(
        Grep.Args(pattern=pattern), ToolContext(project_root=tmp_path, grep_backend="python")
    )
    assert result.is_error and "exponential" in result.content


async def test_common_patterns_still_run_in_python(tmp_path):
    (tmp_path / "f.txt").write_text("snake_case_name = 1\n")
    for pattern in (r"[a-z]+(?:_[a-z]+)*\s*=", r"(?:\.\w+)+|name(?= =)", r"\w+\s*=\s*\d+"):
        result = await Grep().run(
            Grep.Args(pattern=pattern), ToolContext(project_root=tmp_path, grep_backend="python")
        )
        assert not result.is_error and "f.txt:1:" in result.content, pattern
