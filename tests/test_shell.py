"""execute_command against real processes."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import pid_alive
from hypothesis import given
from hypothesis import strategies as st

from mermaid_cli.config.sections.exec import ExecSection
from mermaid_cli.core.types import ToolResult
from mermaid_cli.tools.base import ToolContext
from mermaid_cli.tools.shell import MAX_OUTPUT_BYTES, ExecuteCommand, ExecuteCommandArgs, HeadTail

# "Did not hang": the failure modes tested here would take 300 s.
NO_HANG_SECS = 20


async def wait_gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def wait_file(path: Path, within: float = 10.0) -> str:
    deadline = time.monotonic() + within
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} never appeared"
        await asyncio.sleep(0.05)
    return path.read_text().strip()


@pytest.fixture
def lines() -> list[str]:
    return []


@pytest.fixture
async def ctx(tmp_path: Path, lines: list[str]):
    context = ToolContext(project_root=tmp_path, progress=lines.append)
    yield context
    for cleanup in context.cleanups:
        result = cleanup()
        if result is not None:
            await result


async def run(ctx: ToolContext, command: str, **kw) -> ToolResult:
    started = time.monotonic()
    result = await ExecuteCommand().run(ExecuteCommandArgs(command=command, **kw), ctx)
    assert time.monotonic() - started < NO_HANG_SECS
    return result


async def test_normal_command_collects_both_streams_and_streams_progress(ctx, lines) -> None:
    result = await run(ctx, "echo hello; echo warn >&2")
    assert not result.is_error
    assert result.metadata["exit_code"] == 0
    assert result.metadata["stdout_lines"] == 1 and result.metadata["stderr_lines"] == 1
    # the two pipes are read concurrently: their relative order is not guaranteed
    assert sorted(result.content.split("\n\n[exit code")[0].splitlines()) == ["hello", "warn"]
    assert "[exit code 0]" in result.content
    assert sorted(lines) == ["hello", "warn"]
    assert result.summary == "command completed (exit 0)"


async def test_non_zero_exit_is_an_error_with_output(ctx) -> None:
    result = await run(ctx, "echo partial; echo broken >&2; exit 3")
    assert result.is_error
    assert result.metadata["exit_code"] == 3
    assert "partial" in result.content and "broken" in result.content
    assert "[exit code 3]" in result.content
    assert "exit 3" in result.summary


async def test_output_is_streamed_while_the_command_runs(ctx: ToolContext, tmp_path: Path) -> None:
    # The command waits for a file that only the progress callback creates: without line-by-line
    # streaming it would run into its timeout.
    gate = tmp_path / "go"
    ctx.progress = lambda line: gate.touch() if line == "first" else None
    result = await run(ctx, "echo first; while [ ! -f go ]; do sleep 0.05; done; echo second", timeout=15)
    assert not result.is_error, result.content
    assert "first\nsecond" in result.content


async def test_binary_junk_becomes_valid_text(ctx) -> None:
    result = await run(ctx, "head -c 2000 /dev/urandom; printf 'a\\0b\\001c\\x7f\\td\\n'")
    assert isinstance(result.content, str)
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", result.content)
    assert "abc\td" in result.content
    result.content.encode("utf-8")  # no lone surrogates
    json.loads(json.dumps(result.model_dump()))


async def test_terminal_escapes_and_carriage_returns_are_cleaned(ctx) -> None:
    result = await run(ctx, r"printf '\033[31mred\033[0m\n10%%\r50%%\r100%%\nwin\r\n'")
    assert result.content.startswith("red\n100%\nwin\n")


async def test_timeout_kills_the_whole_tree(ctx, tmp_path: Path) -> None:
    result = await run(ctx, "sleep 300 & echo $! > gc.pid; echo started; wait", timeout=1)
    assert result.is_error
    assert result.metadata["timed_out"] is True
    assert "timed out after 1 s" in result.content
    assert "started" in result.content
    assert await wait_gone(int((tmp_path / "gc.pid").read_text()))


async def test_timeout_escalates_to_sigkill_when_sigterm_is_ignored(ctx, tmp_path: Path) -> None:
    result = await run(
        ctx, "trap '' TERM; sleep 300 & echo $! > gc.pid; while :; do sleep 0.1; done", timeout=1
    )
    assert result.metadata["timed_out"] is True
    assert result.metadata["signal"] == "SIGKILL"
    assert result.metadata["exit_code"] == 137
    assert await wait_gone(int((tmp_path / "gc.pid").read_text()))


async def test_grandchild_holding_the_pipe_does_not_hang(ctx, tmp_path: Path) -> None:
    result = await run(ctx, "sleep 300 & echo $! > gc.pid; echo done")
    assert not result.is_error
    assert result.content.startswith("done")
    assert "kept the output open" in result.content
    assert await wait_gone(int((tmp_path / "gc.pid").read_text()))


async def test_detached_leftover_is_stopped(ctx, tmp_path: Path) -> None:
    result = await run(ctx, "sleep 300 >/dev/null 2>&1 & echo $! > gc.pid")
    assert not result.is_error
    assert "left running were stopped" in result.content
    assert await wait_gone(int((tmp_path / "gc.pid").read_text()))


async def test_stdin_is_at_eof(ctx) -> None:
    result = await run(ctx, 'cat; read line; echo "read=$?"', timeout=60)
    assert not result.is_error
    assert result.content.startswith("read=1")


async def test_large_output_keeps_head_and_tail(ctx) -> None:
    result = await run(ctx, "seq 1 200000")
    assert not result.is_error
    body = result.content.split("\n\n[exit code")[0]
    assert body.startswith("1\n2\n3\n")
    assert body.endswith("199999\n200000")
    assert re.search(r"\[\.\.\. \d+ bytes of output cut from the middle \.\.\.\]", body)
    assert len(body.encode()) <= MAX_OUTPUT_BYTES + 100
    assert (
        result.metadata["truncated_bytes"]
        == len("\n".join(map(str, range(1, 200001))) + "\n") - MAX_OUTPUT_BYTES
    )


async def test_environment_is_scrubbed(ctx, monkeypatch) -> None:
    monkeypatch.setenv("FOO_TOKEN", "x-token-value")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "y-key-value")
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "1")
    result = await run(ctx, "env")
    assert "FOO_TOKEN" not in result.content and "x-token-value" not in result.content
    assert "ANTHROPIC_API_KEY" not in result.content and "y-key-value" not in result.content
    assert "GIT_TERMINAL_PROMPT=0" in result.content.splitlines()


async def test_env_allow_from_settings(ctx, monkeypatch) -> None:
    monkeypatch.setenv("FOO_TOKEN", "x-token-value")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "y-key-value")
    ctx.settings = SimpleNamespace(exec=ExecSection(env_allow=["FOO_TOKEN"]))
    result = await run(ctx, "env")
    assert "FOO_TOKEN=x-token-value" in result.content.splitlines()
    assert "y-key-value" not in result.content


async def test_child_env_from_context_wins(ctx) -> None:
    ctx.child_env = {"PATH": os.environ["PATH"], "ONLY_THIS": "1"}
    result = await run(ctx, "env")
    names = {line.split("=", 1)[0] for line in result.content.split("\n\n[exit")[0].splitlines()}
    assert "ONLY_THIS" in names and "HOME" not in names


async def test_working_dir_inside_the_project(ctx, tmp_path: Path) -> None:
    (tmp_path / "sub" / "dir").mkdir(parents=True)
    result = await run(ctx, "pwd", working_dir="sub/dir")
    assert result.content.startswith(str((tmp_path / "sub" / "dir").resolve()))
    result = await run(ctx, "pwd", working_dir=str(tmp_path / "sub"))
    assert result.content.startswith(str((tmp_path / "sub").resolve()))
    result = await run(ctx, "pwd")
    assert result.content.startswith(str(tmp_path.resolve()))


@pytest.mark.parametrize("where", ["..", "../..", "/", "sub/../../x", "link", "missing"])
async def test_working_dir_outside_or_missing_is_refused(ctx, tmp_path: Path, where: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "sub").mkdir()
    (project / "link").symlink_to(tmp_path)
    ctx.project_root = project
    marker = tmp_path / "ran"
    result = await run(ctx, f"touch {marker}", working_dir=where)
    assert result.is_error
    assert "outside the project" in result.content or "not a directory" in result.content
    assert not marker.exists()


async def test_timeout_is_clamped_to_the_maximum(ctx) -> None:
    ctx.settings = SimpleNamespace(exec=ExecSection(default_timeout=1, max_timeout=1))
    result = await run(ctx, "sleep 300", timeout=500)
    assert "clamped to the maximum 1 s" in result.content
    assert result.metadata["timed_out"] is True


async def test_default_timeout_comes_from_settings(ctx) -> None:
    ctx.settings = SimpleNamespace(exec=ExecSection(default_timeout=1))
    result = await run(ctx, "sleep 300")
    assert result.metadata["timed_out"] is True
    assert "timed out after 1 s" in result.summary


async def test_killed_by_signal_is_reported(ctx) -> None:
    result = await run(ctx, "kill -9 $$")
    assert result.is_error
    assert result.metadata["exit_code"] == 137
    assert result.metadata["signal"] == "SIGKILL"
    assert "killed by SIGKILL" in result.content


async def test_cancelling_the_call_kills_the_tree(ctx, tmp_path: Path) -> None:
    task = asyncio.create_task(run(ctx, "sleep 300 & echo $! > gc.pid; wait"))
    pid = int(await wait_file(tmp_path / "gc.pid"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_gone(pid)


async def test_missing_program_is_a_normal_failure(ctx) -> None:
    result = await run(ctx, "definitely-not-a-program-xyz")
    assert result.is_error
    assert result.metadata["exit_code"] == 127
    assert "not found" in result.content


@given(chunks=st.lists(st.binary(max_size=300), max_size=30), limit=st.integers(min_value=2, max_value=1000))
def test_head_tail_keeps_prefix_and_suffix(chunks: list[bytes], limit: int) -> None:
    buffer = HeadTail(limit)
    for chunk in chunks:
        buffer.add(chunk)
    data = b"".join(chunks)
    kept = bytes(buffer.head) + buffer.tail
    assert buffer.dropped == max(0, len(data) - limit)
    assert len(kept) == min(len(data), limit)
    assert data.startswith(bytes(buffer.head))
    assert data.endswith(buffer.tail)


async def test_flood_of_output_is_fast_and_progress_is_throttled(ctx, lines) -> None:
    result = await run(ctx, "yes | head -n 3000000")
    assert not result.is_error
    assert result.metadata["stdout_lines"] == 3_000_000
    assert len(lines) < 1000
    assert re.search(r"\[\.\.\. \d+ lines of output not shown \.\.\.\]", lines[-1])


async def test_long_line_without_newline_is_kept(ctx) -> None:
    result = await run(ctx, "head -c 100000 /dev/zero | tr '\\0' x; echo; echo end")
    body = result.content.split("\n\n[exit code")[0]
    assert body == "x" * 100000 + "\nend"


async def test_concurrent_commands_do_not_block_each_other(ctx) -> None:
    # each command waits for the file the other one creates
    first = run(ctx, "touch a; while [ ! -f b ]; do sleep 0.05; done; echo one", timeout=15)
    second = run(ctx, "touch b; while [ ! -f a ]; do sleep 0.05; done; echo two", timeout=15)
    one, two = await asyncio.gather(first, second)
    assert not one.is_error and not two.is_error
    assert one.content.startswith("one") and two.content.startswith("two")


@pytest.fixture
async def guarded_ctx(tmp_path: Path):
    """A context whose sandbox has the orphan guard's cgroup (full_access hardening): the run's
    children all join it, so an empty cgroup tells `Child.tree_alive` nothing is left."""
    from mermaid_cli.security.sandbox import OrphanGuard, prepare, probe

    support = probe(env={})
    if support.cgroup is None:
        pytest.skip("no writable cgroup v2 here (the session scan is tested above)")
    guard = OrphanGuard.start(support.cgroup)
    context = ToolContext(project_root=tmp_path, sandbox=prepare(None, guard=guard, support=support))
    try:
        yield context
    finally:
        guard.close(timeout=10)


async def test_with_the_cgroup_a_leftover_is_still_found_and_a_clean_exit_leaves_nothing(
    guarded_ctx, tmp_path: Path
) -> None:
    sandbox = guarded_ctx.sandbox
    clean = await run(guarded_ctx, "echo ok")
    assert not clean.is_error and "stopped" not in clean.content and sandbox.nothing_alive()
    left = await run(guarded_ctx, "sleep 300 >/dev/null 2>&1 & echo $! > gc.pid")
    assert "left running were stopped" in left.content
    assert await wait_gone(int((tmp_path / "gc.pid").read_text()))
    assert sandbox.nothing_alive()
