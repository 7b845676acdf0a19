"""read_file, write_file, delete_file, create_directory and atomic writes."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mermaid_cli.tools.atomic import atomic_write
from mermaid_cli.tools.base import ToolContext
from mermaid_cli.tools.catalog_files import file_tools
from mermaid_cli.tools.files import CreateDirectory, DeleteFile, ReadFile, WriteFile


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(project_root=tmp_path)


async def read(ctx: ToolContext, path: str, **kw):
    return await ReadFile().run(ReadFile.Args(path=path, **kw), ctx)


# --- read_file -------------------------------------------------------------------------------


async def test_read_numbers_lines_like_cat_n(ctx, tmp_path):
    (tmp_path / "a.txt").write_text("alpha\nbeta\ngamma\n")
    result = await read(ctx, "a.txt")
    assert not result.is_error
    assert result.content == "     1\talpha\n     2\tbeta\n     3\tgamma"
    assert result.summary == "Read a.txt (lines 1-3)"


async def test_read_offset_and_limit_say_what_follows(ctx, tmp_path):
    (tmp_path / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    result = await read(ctx, "n.txt", offset=10, limit=3)
    assert result.content.splitlines()[:3] == ["    10\tline 10", "    11\tline 11", "    12\tline 12"]
    assert "offset=13" in result.content
    result = await read(ctx, "n.txt", offset=99)
    assert result.content == "    99\tline 99\n   100\tline 100"
    result = await read(ctx, "n.txt", offset=500)
    assert result.is_error and "past the end" in result.content and "100 lines" in result.content


async def test_read_default_limit_is_2000_lines(ctx, tmp_path):
    (tmp_path / "big.txt").write_text("x\n" * 2500)
    result = await read(ctx, "big.txt")
    lines = result.content.splitlines()
    assert lines[1999] == "  2000\tx" and "offset=2001" in lines[2000]


async def test_read_cuts_long_lines_with_a_marker(ctx, tmp_path):
    (tmp_path / "long.txt").write_text("a" * 50_000 + "\nshort\n")
    result = await read(ctx, "long.txt")
    first, second = result.content.splitlines()
    assert first.startswith("     1\t" + "a" * 2000) and first.endswith("[... line cut at 2000 chars]")
    assert len(first) < 2100
    assert second == "     2\tshort"


async def test_read_caps_result_at_30000_chars(ctx, tmp_path):
    (tmp_path / "wide.txt").write_text(("y" * 200 + "\n") * 1000)
    result = await read(ctx, "wide.txt")
    assert len(result.content) <= 30_000
    last_line = result.content.splitlines()[-2]
    shown = int(last_line.split("\t")[0])
    assert 100 < shown < 1000 and f"offset={shown + 1}" in result.content.splitlines()[-1]


async def test_read_lists_a_directory(ctx, tmp_path):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "f.txt").write_text("x")
    result = await read(ctx, "d")
    assert not result.is_error
    assert result.content.splitlines()[1:] == ["f.txt", "sub/"]


async def test_read_refuses_binary_and_returns_images(ctx, tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"abc\x00def" * 10)
    result = await read(ctx, "blob.bin")
    assert result.is_error and "binary" in result.content
    png = b"\x89PNG\r\n\x1a\n" + b"\x00\x01" * 100
    (tmp_path / "pic.png").write_bytes(png)
    result = await read(ctx, "pic.png")
    assert not result.is_error and result.content == f"[image/png, {len(png)} bytes]"
    assert result.images[0].media_type == "image/png"
    assert base64.b64decode(result.images[0].data) == png
    webp = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 20
    (tmp_path / "pic.webp").write_bytes(webp)
    assert (await read(ctx, "pic.webp")).images[0].media_type == "image/webp"
    (tmp_path / "huge.jpg").write_bytes(b"\xff\xd8\xff" + b"\x00" * (4 * 1024 * 1024))
    result = await read(ctx, "huge.jpg")
    assert result.is_error and "image limit" in result.content and not result.images


async def test_read_missing_and_empty(ctx, tmp_path):
    result = await read(ctx, "nope.txt")
    assert result.is_error and "does not exist" in result.content
    (tmp_path / "empty.txt").write_text("")
    result = await read(ctx, "empty.txt")
    assert not result.is_error and "empty" in result.content


async def test_read_replaces_invalid_utf8(ctx, tmp_path):
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\n")
    assert (await read(ctx, "latin.txt")).content == "     1\tcaf\ufffd"


# --- write_file ------------------------------------------------------------------------------


async def test_write_creates_parents_and_reports(tmp_path):
    calls: list[tuple[list[Path], str, bool]] = []

    def checkpoint(paths: list[Path], reason: str) -> None:
        calls.append((paths, reason, paths[0].exists()))

    ctx = ToolContext(project_root=tmp_path, checkpoint=checkpoint)
    result = await WriteFile().run(WriteFile.Args(path="a/b/c.txt", content="one\ntwo\n"), ctx)
    assert not result.is_error
    assert result.content == "Wrote a/b/c.txt (2 lines)"
    assert result.metadata["files_changed"] == ["a/b/c.txt"]
    assert (tmp_path / "a" / "b" / "c.txt").read_text() == "one\ntwo\n"
    assert calls == [([tmp_path.resolve() / "a" / "b" / "c.txt"], "write_file", False)]
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == ["c.txt"]  # no temp file left


async def test_write_overwrites_keeping_the_mode(ctx, tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("old\n")
    script.chmod(0o751)
    result = await WriteFile().run(WriteFile.Args(path="run.sh", content="new"), ctx)
    assert result.content == "Wrote run.sh (1 lines)"
    assert script.read_text() == "new" and (script.stat().st_mode & 0o777) == 0o751


async def test_write_refuses_a_directory(ctx, tmp_path):
    (tmp_path / "d").mkdir()
    result = await WriteFile().run(WriteFile.Args(path="d", content="x"), ctx)
    assert result.is_error and "directory" in result.content


# --- delete_file / create_directory ----------------------------------------------------------


async def test_delete_file(tmp_path):
    seen = []
    ctx = ToolContext(project_root=tmp_path, checkpoint=lambda p, r: seen.append((p, r)))
    (tmp_path / "x.txt").write_text("x")
    result = await DeleteFile().run(DeleteFile.Args(path="x.txt"), ctx)
    assert not result.is_error and not (tmp_path / "x.txt").exists()
    assert result.metadata["files_changed"] == ["x.txt"] and seen[0][1] == "delete_file"
    (tmp_path / "dir").mkdir()
    result = await DeleteFile().run(DeleteFile.Args(path="dir"), ctx)
    assert result.is_error and "directory" in result.content and (tmp_path / "dir").is_dir()
    result = await DeleteFile().run(DeleteFile.Args(path="gone.txt"), ctx)
    assert result.is_error and "does not exist" in result.content


async def test_create_directory(ctx, tmp_path):
    result = await CreateDirectory().run(CreateDirectory.Args(path="p/q/r"), ctx)
    assert not result.is_error and (tmp_path / "p" / "q" / "r").is_dir()
    result = await CreateDirectory().run(CreateDirectory.Args(path="p/q"), ctx)
    assert not result.is_error and "already exists" in result.content
    (tmp_path / "file").write_text("")
    result = await CreateDirectory().run(CreateDirectory.Args(path="file"), ctx)
    assert result.is_error and "not a directory" in result.content


def test_catalog_lists_every_file_tool():
    names = [t.name for t in file_tools()]
    assert names == [
        "read_file",
        "write_file",
        "edit_file",
        "apply_patch",
        "delete_file",
        "create_directory",
        "glob",
        "grep",
    ]
    for tool in file_tools():
        for prop in tool.spec().input_schema["properties"].values():
            assert prop["description"] and len(prop["description"]) < 160


# --- atomic writes ---------------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from mermaid_cli.tools.atomic import atomic_write
    target = Path(sys.argv[1])
    contents = [b"A" * 3_000_000, b"B" * 2_000_000]
    print("ready", flush=True)
    i = 0
    while True:
        atomic_write(target, contents[i % 2])
        i += 1
    """
)


def test_killed_mid_write_leaves_old_or_new(tmp_path):
    target = tmp_path / "target.bin"
    target.write_bytes(b"A" * 3_000_000)
    valid = {b"A" * 3_000_000, b"B" * 2_000_000}
    for attempt in range(8):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        time.sleep(0.02 + attempt * 0.017)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        assert proc.returncode == -signal.SIGKILL
        assert target.read_bytes() in valid
    # only temp files (dot-prefixed) can be left behind, never a partial target
    assert all(p.name.startswith(".target.bin.") for p in tmp_path.iterdir() if p != target)


def test_atomic_write_new_file_gets_umask_mode(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "new.txt", b"hi")
    finally:
        os.umask(old)
    assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o644


async def test_read_a_fifo_does_not_hang(ctx, tmp_path):
    os.mkfifo(tmp_path / "pipe")
    result = await read(ctx, "pipe")
    assert result.is_error and "not a regular file" in result.content


async def test_write_with_a_lone_surrogate_does_not_crash(ctx, tmp_path):
    result = await WriteFile().run(WriteFile.Args(path="s.txt", content="a\ud800b"), ctx)
    assert not result.is_error and (tmp_path / "s.txt").read_bytes() == b"a?b"
