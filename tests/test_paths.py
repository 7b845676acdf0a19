"""The path jail: escapes through `..`, absolute paths, file and directory symlinks, URLs, and a
symlink swapped in after the check (property tests)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mermaid_cli.tools import fileio
from mermaid_cli.tools.base import ToolContext
from mermaid_cli.tools.files import CreateDirectory, DeleteFile, ReadFile, WriteFile
from mermaid_cli.tools.paths import PathRefused, open_file, resolve_path

SECRET = "top secret outside the project\n"


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "project"
    outside = tmp_path / "outside"
    (root / "src").mkdir(parents=True)
    outside.mkdir()
    (root / "src" / "main.py").write_text("print('hi')\n")
    (outside / "secret.txt").write_text(SECRET)
    return root, outside


def refused(result) -> bool:
    return result.is_error and "outside the project (external access is not allowed)" in result.content


def test_resolve_inside_and_rel(world):
    root, _ = world
    r = resolve_path(root, "src/../src/./main.py")
    assert r.inside and r.rel == "src/main.py" and r.path == root.resolve() / "src" / "main.py"
    assert resolve_path(root, ".").rel == "."
    assert resolve_path(root, str(root / "src")).inside  # absolute but inside


async def test_dotdot_escape_is_refused(world):
    root, outside = world
    ctx = ToolContext(project_root=root)
    assert not resolve_path(root, "../outside/secret.txt").inside
    result = await ReadFile().run(ReadFile.Args(path="../outside/secret.txt"), ctx)
    assert refused(result) and SECRET not in result.content
    result = await WriteFile().run(WriteFile.Args(path="src/../../outside/secret.txt", content="x"), ctx)
    assert refused(result)
    assert (outside / "secret.txt").read_text() == SECRET


async def test_absolute_path_outside_is_refused(world):
    root, outside = world
    ctx = ToolContext(project_root=root)
    result = await ReadFile().run(ReadFile.Args(path=str(outside / "secret.txt")), ctx)
    assert refused(result)
    result = await DeleteFile().run(DeleteFile.Args(path=str(outside / "secret.txt")), ctx)
    assert refused(result) and (outside / "secret.txt").exists()
    result = await CreateDirectory().run(CreateDirectory.Args(path=str(outside / "new")), ctx)
    assert refused(result) and not (outside / "new").exists()


async def test_file_symlink_to_outside_is_refused(world):
    root, outside = world
    (root / "link.txt").symlink_to(outside / "secret.txt")
    ctx = ToolContext(project_root=root)
    result = await ReadFile().run(ReadFile.Args(path="link.txt"), ctx)
    assert refused(result) and SECRET not in result.content
    result = await WriteFile().run(WriteFile.Args(path="link.txt", content="pwned"), ctx)
    assert refused(result)
    assert (outside / "secret.txt").read_text() == SECRET


async def test_dir_symlink_to_outside_is_refused(world):
    root, outside = world
    (root / "src" / "escape").symlink_to(outside, target_is_directory=True)
    ctx = ToolContext(project_root=root)
    assert refused(await ReadFile().run(ReadFile.Args(path="src/escape/secret.txt"), ctx))
    assert refused(await ReadFile().run(ReadFile.Args(path="src/escape"), ctx))
    assert refused(await WriteFile().run(WriteFile.Args(path="src/escape/new.txt", content="x"), ctx))
    assert not (outside / "new.txt").exists()


async def test_symlinks_inside_the_project_work(world):
    root, _ = world
    (root / "alias.py").symlink_to(root / "src" / "main.py")
    (root / "srcdir").symlink_to(root / "src", target_is_directory=True)
    ctx = ToolContext(project_root=root)
    result = await ReadFile().run(ReadFile.Args(path="alias.py"), ctx)
    assert not result.is_error and "print('hi')" in result.content
    result = await WriteFile().run(WriteFile.Args(path="srcdir/new.py", content="x = 1\n"), ctx)
    assert not result.is_error and result.metadata["files_changed"] == ["src/new.py"]
    assert (root / "src" / "new.py").read_text() == "x = 1\n"


async def test_urls_point_to_web_fetch(world):
    root, _ = world
    result = await ReadFile().run(ReadFile.Args(path="https://example.com/x"), ToolContext(project_root=root))
    assert result.is_error and "web_fetch" in result.content


async def test_external_access_gate_hooks(world):
    root, outside = world
    path = str(outside / "secret.txt")
    ctx = ToolContext(project_root=root, allow_external=True)
    assert SECRET.strip() in (await ReadFile().run(ReadFile.Args(path=path), ctx)).content

    seen = []

    async def gate(resolved, action):
        seen.append((str(resolved.path), action))
        return "denied by the test gate" if action == "write" else None

    ctx = ToolContext(project_root=root, external_access=gate)
    assert not (await ReadFile().run(ReadFile.Args(path=path), ctx)).is_error
    result = await WriteFile().run(WriteFile.Args(path=path, content="x"), ctx)
    assert result.is_error and result.content == "denied by the test gate"
    assert seen == [
        (str(outside.resolve() / "secret.txt"), "read"),
        (str(outside.resolve() / "secret.txt"), "write"),
    ]
    assert (outside / "secret.txt").read_text() == SECRET


# --- property tests --------------------------------------------------------------------------

COMPONENTS = ["a", "b", "f.txt", "lin", "lout", "lfile", "..", "."]


def _make_world(base: Path) -> tuple[Path, Path]:
    root = base / "root"
    outside = base / "outside"
    (root / "a" / "b").mkdir(parents=True)
    (outside / "a" / "b").mkdir(parents=True)
    for d in (root, root / "a", root / "a" / "b"):
        (d / "f.txt").write_text("inside\n")
    for d in (outside, outside / "a", outside / "a" / "b"):
        (d / "f.txt").write_text(SECRET)
    (root / "a" / "lin").symlink_to(root / "a" / "b", target_is_directory=True)
    (root / "a" / "lout").symlink_to(outside / "a", target_is_directory=True)
    (root / "a" / "b" / "lout").symlink_to(outside, target_is_directory=True)
    (root / "lfile").symlink_to(outside / "f.txt")
    (root / "a" / "lfile").symlink_to(root / "f.txt")
    return root, outside


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inspects /proc/self/fd")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=6), absolute=st.booleans())
def test_random_paths_never_reach_outside(parts: list[str], absolute: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root, outside = _make_world(Path(tmp))
        path = os.path.join(str(root) if absolute else "", *parts)
        r = resolve_path(root, path)
        real_outside = os.path.realpath(outside)
        if str(r.path).startswith(real_outside):
            assert not r.inside
        if r.inside:
            try:
                fd = open_file(r)
            except (OSError, PathRefused):
                return
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            finally:
                os.close(fd)
            assert not target.startswith(real_outside)
            assert target.startswith(os.path.realpath(root))


SWAP_KINDS = ["dir_to_outside", "dir_to_inside", "file_to_outside", "file_to_inside"]


@settings(max_examples=120, deadline=None)
@given(
    depth=st.integers(min_value=0, max_value=2),
    swap_at=st.integers(min_value=0, max_value=2),
    kind=st.sampled_from(SWAP_KINDS),
    op=st.sampled_from(["read", "write", "mkdir"]),
)
def test_symlink_swapped_in_after_the_check_cannot_escape(
    depth: int, swap_at: int, kind: str, op: str
) -> None:
    """Resolve a path inside, then replace one of its components by a symlink (to a directory or
    file, inside or outside), then use the resolved path: never outside content, never an
    outside write."""
    with tempfile.TemporaryDirectory() as tmp:
        root, outside = _make_world(Path(tmp))
        dirs = ["a", "b"][:depth]
        rel = "/".join([*dirs, "f.txt"])
        r = resolve_path(root, rel)
        r_dir = resolve_path(root, "/".join([*dirs, "newdir"]))
        assert r.inside and r_dir.inside
        swap_at = min(swap_at, depth)  # which component: a directory, or the file itself
        victim = root.joinpath(*([*dirs, "f.txt"][: swap_at + 1]))
        is_dir = victim.is_dir()
        if is_dir:
            shutil.rmtree(victim)
        else:
            victim.unlink()
        if kind == "dir_to_outside":
            victim.symlink_to(outside / "a" if depth else outside, target_is_directory=True)
        elif kind == "dir_to_inside":
            (root / "other").mkdir(exist_ok=True)
            (root / "other" / "f.txt").write_text("other inside\n")
            (root / "other" / "b").mkdir(exist_ok=True)
            (root / "other" / "b" / "f.txt").write_text("other inside\n")
            victim.symlink_to(root / "other", target_is_directory=True)
        elif kind == "file_to_outside":
            victim.symlink_to(outside / "f.txt")
        else:
            victim.symlink_to(root / "f.txt")
        before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
        try:
            if op == "read":
                data = fileio.read_bytes(r)
                assert data is None or SECRET.encode() not in data
            elif op == "write":
                fileio.write_bytes(r, b"written\n")
            else:
                fileio.make_dirs(r_dir)
        except (OSError, PathRefused):
            pass
        after = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
        assert after == before
        assert not any(p.name == "newdir" for p in outside.rglob("*"))


async def test_swap_after_check_is_reported_as_a_race(world):
    root, outside = world
    r = resolve_path(root, "src/main.py")
    shutil.rmtree(root / "src")
    (root / "src").symlink_to(outside, target_is_directory=True)
    (outside / "main.py").write_text(SECRET)
    for action in (lambda: fileio.read_bytes(r), lambda: fileio.write_bytes(r, b"x")):
        with pytest.raises(PathRefused, match="changed while being accessed"):
            action()
    assert (outside / "main.py").read_text() == SECRET
