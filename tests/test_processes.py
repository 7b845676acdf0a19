"""Background processes: execute_command mode=background + background_process, real processes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import pid_alive

from mermaid_cli.core.types import ToolResult
from mermaid_cli.tools.base import ToolContext
from mermaid_cli.tools.catalog_shell import shell_tools
from mermaid_cli.tools.processes import READ_BYTES, BackgroundProcess, BackgroundProcessArgs, registry_for
from mermaid_cli.tools.shell import ExecuteCommand, ExecuteCommandArgs

NO_HANG_SECS = 20

TICKER = textwrap.dedent(
    """
    import time
    for i in range(4):
        print(f"line {i}", flush=True)
        time.sleep(0.1)
    print("READY", flush=True)
    time.sleep(300)
    """
)


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
async def ctx(tmp_path: Path):
    context = ToolContext(project_root=tmp_path)
    yield context
    for cleanup in context.cleanups:
        result = cleanup()
        if result is not None:
            await result


async def start(ctx: ToolContext, command: str) -> ToolResult:
    result = await ExecuteCommand().run(ExecuteCommandArgs(command=command, mode="background"), ctx)
    assert not result.is_error, result.content
    return result


async def bg(ctx: ToolContext, action: str, **kw) -> ToolResult:
    started = time.monotonic()
    result = await BackgroundProcess().run(BackgroundProcessArgs(action=action, **kw), ctx)
    assert time.monotonic() - started < NO_HANG_SECS
    return result


def python(code: str) -> str:
    return f"{sys.executable} -c '{code}'"


async def test_start_returns_an_id_and_pid(ctx) -> None:
    result = await start(ctx, "sleep 300")
    assert result.metadata["background_id"] == "bg-1"
    assert "bg-1" in result.content and str(result.metadata["pid"]) in result.content
    assert pid_alive(result.metadata["pid"])
    second = await start(ctx, "sleep 300")
    assert second.metadata["background_id"] == "bg-2"


async def test_wait_for_pattern_then_read_only_new_output(ctx) -> None:
    await start(ctx, python(TICKER))
    result = await bg(ctx, "wait", id="bg-1", pattern=r"line [2]", timeout_secs=15)
    assert "pattern 'line [2]' matched" in result.content
    assert "line 0" in result.content and "line 2" in result.content
    assert result.metadata["running"] is True
    result = await bg(ctx, "wait", id="bg-1", pattern="^READY$", timeout_secs=15)
    assert "matched" in result.content
    assert "line 0" not in result.content and "line 3" in result.content and "READY" in result.content
    result = await bg(ctx, "read", id="bg-1")
    assert "(no new output)" in result.content
    assert "running" in result.content


async def test_wait_until_exit_reports_the_exit_code(ctx) -> None:
    await start(ctx, "echo one; sleep 0.2; echo two; exit 4")
    result = await bg(ctx, "wait", id="bg-1", timeout_secs=15)
    assert "the process exited" in result.content
    assert "exited (exit code 4)" in result.content
    assert "one\ntwo" in result.content
    assert result.metadata == {"background_id": "bg-1", "running": False, "exit_code": 4}


async def test_wait_times_out_while_it_still_runs(ctx) -> None:
    await start(ctx, "sleep 300")
    result = await bg(ctx, "wait", id="bg-1", timeout_secs=0.3)
    assert "still running" in result.content
    assert result.metadata["running"] is True


async def test_wait_for_a_pattern_that_never_comes_ends_at_exit(ctx) -> None:
    await start(ctx, "echo nothing here")
    result = await bg(ctx, "wait", id="bg-1", pattern="READY", timeout_secs=15)
    assert "exited before 'READY' appeared" in result.content


async def test_invalid_pattern_is_an_error(ctx) -> None:
    await start(ctx, "sleep 300")
    result = await bg(ctx, "wait", id="bg-1", pattern="(unclosed")
    assert result.is_error and "invalid pattern" in result.content


async def test_read_returns_at_most_the_newest_32_kib(ctx) -> None:
    await start(ctx, "seq 1 30000; echo END")
    result = await bg(ctx, "wait", id="bg-1", timeout_secs=15)
    assert result.content.rstrip().endswith("30000\nEND")
    assert "older bytes of output not shown" in result.content
    assert "\n1\n2\n" not in result.content
    assert len(result.content.encode()) < READ_BYTES + 300


async def test_stop_kills_the_whole_tree(ctx, tmp_path: Path) -> None:
    started = await start(ctx, "sleep 300 & echo $! > gc.pid; sleep 300")
    grandchild = int(await wait_file(tmp_path / "gc.pid"))
    result = await bg(ctx, "stop", id="bg-1")
    assert "stopped the process tree" in result.content
    assert result.metadata["running"] is False
    assert await wait_gone(started.metadata["pid"])
    assert await wait_gone(grandchild)
    again = await bg(ctx, "stop", id="bg-1")
    assert not again.is_error and "already finished" in again.content


async def test_list_shows_this_runs_processes(ctx) -> None:
    assert "No background processes" in (await bg(ctx, "list")).content
    await start(ctx, "sleep 300")
    await start(ctx, "true")
    await bg(ctx, "wait", id="bg-2", timeout_secs=15)
    result = await bg(ctx, "list")
    lines = result.content.splitlines()
    assert lines[0].startswith("bg-1") and "running" in lines[0] and "sleep 300" in lines[0]
    assert lines[1].startswith("bg-2") and "exited (exit code 0)" in lines[1]
    assert result.summary == "2 background processes, 1 running"


async def test_unknown_or_missing_id_is_an_error(ctx, tmp_path: Path) -> None:
    await start(ctx, "sleep 300")
    result = await bg(ctx, "read", id="bg-9")
    assert (
        result.is_error and "unknown background process 'bg-9'" in result.content and "bg-1" in result.content
    )
    result = await bg(ctx, "stop")
    assert result.is_error and "needs an id" in result.content
    # another run's context cannot reach this run's processes
    other = ToolContext(project_root=tmp_path)
    result = await BackgroundProcess().run(BackgroundProcessArgs(action="stop", id="bg-1"), other)
    assert result.is_error and "this run's processes: none" in result.content
    assert (await bg(ctx, "read", id="bg-1")).metadata["running"] is True


async def test_cleanup_stops_everything(ctx, tmp_path: Path) -> None:
    first = await start(ctx, "sleep 300 & echo $! > gc.pid; wait")
    second = await start(ctx, "trap '' TERM; while :; do sleep 0.1; done")
    grandchild = int(await wait_file(tmp_path / "gc.pid"))
    assert len(ctx.cleanups) == 1  # registered once per run
    started = time.monotonic()
    for cleanup in ctx.cleanups:
        await cleanup()
    assert time.monotonic() - started < NO_HANG_SECS
    for pid in (first.metadata["pid"], second.metadata["pid"], grandchild):
        assert await wait_gone(pid), pid


async def test_background_uses_the_scrubbed_env_and_working_dir(ctx, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FOO_SECRET", "s3cr3t")
    (tmp_path / "sub").mkdir()
    result = await ExecuteCommand().run(
        ExecuteCommandArgs(command="pwd; env", working_dir="sub", mode="background"), ctx
    )
    assert not result.is_error
    output = (await bg(ctx, "wait", id="bg-1", timeout_secs=15)).content
    assert str((tmp_path / "sub").resolve()) in output
    assert "s3cr3t" not in output and "GIT_TERMINAL_PROMPT=0" in output
    refused = await ExecuteCommand().run(
        ExecuteCommandArgs(command="true", working_dir="..", mode="background"), ctx
    )
    assert refused.is_error


def test_interpreter_exit_kills_leftover_processes(tmp_path: Path) -> None:
    # A run that never awaited its cleanups: the finaliser is the last resort.
    script = textwrap.dedent(
        """
        import asyncio, sys
        from pathlib import Path
        from mermaid_cli.tools.base import ToolContext
        from mermaid_cli.tools.shell import ExecuteCommand, ExecuteCommandArgs

        async def main():
            ctx = ToolContext(project_root=Path(sys.argv[1]))
            result = await ExecuteCommand().run(ExecuteCommandArgs(command="sleep 300", mode="background"), ctx)
            print(result.metadata["pid"], flush=True)
            sys.modules["__main__"].keep = ctx  # still referenced at exit: atexit path

        asyncio.run(main())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=NO_HANG_SECS
    )
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.strip())
    deadline = time.monotonic() + 5
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(pid)


def test_catalog_and_categories() -> None:
    tools = {tool.name: tool for tool in shell_tools()}
    assert tools["execute_command"].category == "shell"
    assert tools["background_process"].category == "session"
    schema = tools["background_process"].spec().input_schema
    assert schema["properties"]["action"]["enum"] == ["read", "wait", "stop", "list"]
    assert "title" not in schema


async def test_registry_is_per_context(tmp_path: Path) -> None:
    a, b = ToolContext(project_root=tmp_path), ToolContext(project_root=tmp_path)
    assert registry_for(a) is registry_for(a)
    assert registry_for(a) is not registry_for(b)
    assert len(a.cleanups) == 1
