"""`exec`'s arguments read without click (`cli/exec_args.py`): the table is the click command's,
and whatever the fast path takes, it reads exactly as click does (issue 23)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mermaid_cli.cli import exec_args
from mermaid_cli.cli.main import cli

EXEC = cli.commands["exec"]


def _kind(param: click.Parameter) -> str:
    if isinstance(param, click.Argument):
        return "words"
    assert isinstance(param, click.Option)
    if param.is_flag:
        return "flag"
    if param.multiple:
        return "many"
    if isinstance(param.type, click.Choice):
        return "choice"
    if isinstance(param.type, click.IntRange):
        return "int"
    if isinstance(param.type, click.FloatRange):
        return "float"
    assert param.type is click.STRING, param
    return "text"


def test_the_table_is_the_click_command() -> None:
    fast = {p.name: p for p in exec_args.PARAMS}
    for param in EXEC.params:
        if param.name in exec_args.CLICK_ONLY:
            assert tuple(param.opts) == exec_args.CLICK_ONLY[param.name]
            continue
        if param.name == "prompt":
            assert _kind(param) == "words"
            continue
        mine = fast.pop(param.name)
        assert (mine.opts, mine.kind) == (tuple(param.opts), _kind(param)), param.name
        assert not param.secondary_opts and param.expose_value and param.callback is None
        assert getattr(param, "envvar", None) is None
        if mine.kind == "choice":
            assert mine.choices == tuple(param.type.choices)
        if mine.kind in ("int", "float"):
            t = param.type
            assert (mine.low, mine.low_open, mine.high) == (t.min, t.min_open, t.max), param.name
            assert not t.clamp and not t.max_open
    assert not fast, f"not exec's any more: {sorted(fast)}"


class _Taken(Exception):
    def __init__(self, kwargs: dict[str, Any]) -> None:
        self.kwargs = kwargs


def _click_reads(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any] | None:
    """What click passes `exec` for argv, or None when click refuses it."""

    def take(kwargs: dict[str, Any]) -> None:
        raise _Taken(dict(kwargs))

    with monkeypatch.context() as m:
        m.setattr("mermaid_cli.cli.main.run_exec", take)
        try:
            cli.main(argv, prog_name="mermaid", standalone_mode=False)
        except _Taken as taken:
            return taken.kwargs
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            return None
    raise AssertionError(f"click neither ran nor refused {argv}")


_FLAGS = [opt for p in exec_args.PARAMS if p.kind == "flag" for opt in p.opts]
_ANY = ["x", "", "two words", "a=b", "-", "-v", "--json", "-1"]
_NUMBERS = ["0", "1", "20", "21", "-0", " 3 ", "+2", "1_0", "0.5", "nan", "inf", "1e400", "٣"]


def _values_for(param: exec_args.Param) -> st.SearchStrategy[str]:
    """Values near what `param` accepts: its choices in other cases, numbers at its bounds."""
    if param.kind == "choice":
        return st.sampled_from([*param.choices, *(c.upper() for c in param.choices), *_ANY])
    if param.kind in ("int", "float"):
        return st.sampled_from(_NUMBERS + _ANY)
    return st.sampled_from(_ANY)


_VALUED = st.sampled_from([p for p in exec_args.PARAMS if p.kind != "flag"])
#: pieces of an argv, each one or two tokens: an option and its value, `--opt=value`, a flag, a
#: prompt word, or something only click reads
_CHUNK = st.one_of(
    _VALUED.flatmap(lambda p: st.tuples(st.sampled_from(p.opts), _values_for(p))),
    _VALUED.flatmap(
        lambda p: st.tuples(
            st.builds(lambda opt, value: f"{opt}={value}", st.sampled_from(p.opts), _values_for(p))
        )
    ),
    st.tuples(st.sampled_from(_FLAGS)),
    st.tuples(st.sampled_from(["fix", "the test", "", "é"])),
    st.tuples(
        st.sampled_from(["--sandbox", "-p", "--help", "-h", "--", "-", "-qm", "-mx", "--bogus", "--mod"])
    ),
    st.tuples(st.text(alphabet="ab -=é", max_size=6)),
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunks=st.lists(_CHUNK, max_size=6))
def test_what_the_fast_path_takes_click_reads_the_same(chunks: list[tuple[str, ...]], monkeypatch) -> None:
    argv = ["exec", *(token for chunk in chunks for token in chunk)]
    fast = exec_args.parse(argv)
    if fast is None:
        return  # click reads it (the fast path may decline anything)
    assert _shown(_click_reads(argv, monkeypatch)) == _shown(fast)


def _shown(kwargs: dict[str, Any] | None) -> str:
    """Comparable keyword arguments: a NaN is a NaN on both sides."""
    return repr(sorted(kwargs.items())) if kwargs is not None else "refused"


@pytest.mark.parametrize(
    "argv",
    [
        ["exec", "--json", "--safety", "full_access", "-m", "replay/x.jsonl", "fix it"],
        ["exec", "fix", "--max-turns=3", "-c", "a=1", "-c", "b=2", "--timeout", "0.5", "the", "test"],
        ["exec", "--model", "a", "--model", "b", "-q", "--allowedTools", "Read", "go"],
        ["exec", "--verify-attempts", "20", "--verify-attempts=0", "--max-turns", "1", "--max-cost", "nan"],
        ["exec"],
    ],
)
def test_common_invocations_take_the_fast_path(argv: list[str], monkeypatch) -> None:
    fast = exec_args.parse(argv)
    assert fast is not None and _shown(fast) == _shown(_click_reads(argv, monkeypatch))


@pytest.mark.parametrize(
    "argv",
    [
        ["exec", "--help"],
        ["exec", "--sandbox", "go"],
        ["exec", "-p", "task"],
        ["exec", "--", "--json"],
        ["exec", "-"],
        ["exec", "--json", "-f", "text", "go"],
        ["exec", "--max-turns", "0", "go"],
        ["exec", "--max-cost", "0", "go"],
        ["exec", "--timeout=-0", "go"],
        ["exec", "--verify-attempts", "21", "go"],
        ["exec", "--safety", "AUTO", "go"],
        ["exec", "--dangerously-skip-permissions", "go"],
        ["run", "go"],
    ],
)
def test_everything_else_is_left_to_click(argv: list[str]) -> None:
    assert exec_args.parse(argv) is None


def _run(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "home").mkdir(exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "MERMAID_CONFIG_DIR": str(tmp_path / "home" / "cfg"),
        "MERMAID_DATA_DIR": str(tmp_path / "home" / "data"),
        "PYTHONPROFILEIMPORTTIME": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "mermaid_cli", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_a_plain_exec_runs_without_importing_click(tmp_path: Path) -> None:
    model = f"replay/{FIXTURES}/demo/hello.jsonl"
    done = _run(tmp_path, "exec", "--json", "--model", model, "create hello.txt containing hi")
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "hello.txt").read_text().strip() == "hi"
    assert done.stdout.splitlines()[-1].startswith('{"type":"result"')
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "import time" in line}
    assert "mermaid_cli.run.runner" in imported and "click" not in imported
    # the same flags in a spelling the fast path leaves alone go through click, to the same end
    (tmp_path / "hello.txt").unlink()
    done = _run(tmp_path, "exec", "--json", "--model", model, "--", "create hello.txt containing hi")
    assert done.returncode == 0 and (tmp_path / "hello.txt").read_text().strip() == "hi"
    assert "click" in {
        line.split("|")[-1].strip() for line in done.stderr.splitlines() if "import time" in line
    }


def test_a_conflict_the_fast_path_leaves_to_click_is_a_usage_error(tmp_path: Path) -> None:
    done = _run(tmp_path, "exec", "--json", "--format", "text", "go")
    assert done.returncode == 2 and "--json conflicts with --format text" in done.stderr
