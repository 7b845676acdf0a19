"""Shared fixtures: every test gets its own config and data dirs, and helpers to run Mermaid."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch):
    """Keep tests away from the developer's config, data and provider keys."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("MERMAID_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("MERMAID_DATA_DIR", str(home / "data"))
    monkeypatch.setenv("MERMAID_NO_KEYRING", "1")
    # runs send nothing early unless a test asks (tests/test_early_request.py): the store beside the
    # bytecode is shared by every test process
    monkeypatch.setenv("MERMAID_NO_EARLY_REQUEST", "1")
    for key in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_BASE_URL",
        "MERMAID_MASK",
    ):
        monkeypatch.delenv(key, raising=False)
    return home


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    return root


def plant_shadows(root: Path, names: list[str], marker: Path) -> Path:
    """Python files under `root` named for modules (`pkg/__init__` for a package) that, if ever
    imported, append their name to `marker`: a repository that would stand in for the modules
    Mermaid imports, were its directory on `sys.path`."""
    for name in names:
        path = root / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"open({str(marker)!r}, 'a').write({name!r} + ' ')\n")
    return root


def pid_alive(pid: int) -> bool:
    """True while `pid` runs; a zombie waiting to be reaped counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def write_script(path: Path, turns: list[dict], model: str = "anthropic/claude-sonnet-4-5") -> Path:
    """A model script (recording format) from a list of turn dicts."""
    lines = [{"type": "header", "format": "mermaid-recording", "version": 1, "model": model}]
    lines += [{"type": "turn", **t} for t in turns]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def say(text: str, **usage) -> dict:
    return {
        "content": [{"type": "text", "text": text}],
        "stop_reason": "stop",
        "usage": usage or {"input_tokens": 100, "output_tokens": 10},
    }


def call(name: str, arguments, call_id: str = "c1", text: str | None = None, **usage) -> dict:
    content = [{"type": "text", "text": text}] if text else []
    block = {"type": "tool_call", "id": call_id, "name": name}
    if isinstance(arguments, str):
        block["raw_arguments"] = arguments
    else:
        block["arguments"] = arguments
    content.append(block)
    return {
        "content": content,
        "stop_reason": "tool_use",
        "usage": usage or {"input_tokens": 100, "output_tokens": 20},
    }


def calls(*blocks: tuple[str, dict, str]) -> dict:
    return {
        "content": [
            {"type": "tool_call", "id": cid, "name": name, "arguments": args} for name, args, cid in blocks
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


@dataclass
class RunOutput:
    code: int
    stdout: str
    stderr: str

    @property
    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]


class FixedClock:
    """Deterministic wall clock and monotonic clock for snapshot tests."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=UTC)
        self.mono = 0.0

    def clock(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now

    def monotonic(self) -> float:
        self.mono += 0.001
        return self.mono


def run_inprocess(args: list[str], cwd: Path, stdin: str | None = None, env: dict | None = None) -> RunOutput:
    """Run `mermaid exec ARGS` in-process (real click parsing) with a fixed clock, for snapshots."""
    from mermaid_cli.cli import main as cli_mod
    from mermaid_cli.cli.exec_run import options_from_params
    from mermaid_cli.run.options import RunIO
    from mermaid_cli.run.runner import execute

    opts = options_from_params(cli_mod.exec_.make_context("exec", list(args)).params)
    out = io.BytesIO()
    err = io.StringIO()
    clock = FixedClock()
    full_env = dict(os.environ)
    full_env.update(env or {})
    run_io = RunIO(
        stdin=io.StringIO(stdin) if stdin is not None else None,
        stdin_is_tty=stdin is None,
        stdout=out,
        stderr=err,
        env=full_env,
        cwd=cwd,
        clock=clock.clock,
        monotonic=clock.monotonic,
        install_signal_handlers=False,
    )
    code = execute(opts, run_io)
    return RunOutput(code, out.getvalue().decode("utf-8"), err.getvalue())


def run_mermaid(
    args: list[str], cwd: Path, stdin: str | None = None, env: dict | None = None, timeout: float = 60
) -> RunOutput:
    """Run the real `mermaid` binary as a subprocess."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "mermaid_cli", *args],
        cwd=cwd,
        input=stdin if stdin is not None else None,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
    )
    return RunOutput(proc.returncode, proc.stdout, proc.stderr)
