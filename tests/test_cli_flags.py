"""`mermaid exec` flags users bring from peer CLIs: aliases mean the same thing, everything else is
a clear usage error (exit 2), and no suggestion ever points at a flag that loosens safety."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, run_inprocess, run_mermaid

from mermaid_cli.cli.exec_run import options_from_params
from mermaid_cli.cli.main import cli, exec_

HELLO = f"replay/{FIXTURES}/demo/hello.jsonl"


def parse(*args: str):
    return options_from_params(exec_.make_context("exec", list(args)).params)


def invoke(*args: str):
    return CliRunner().invoke(cli, ["exec", *args], prog_name="mermaid")


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("--output-format", "stream-json", "jsonl"),
        ("--output-format", "json", "json"),
        ("--output-format", "text", "text"),
        ("-f", "ndjson", "jsonl"),
    ],
)
def test_output_format_alias_spells_the_same_format(flag, value, expected):
    assert parse(flag, value, "task").output_format == expected


def test_output_format_stream_json_streams_every_event(project):
    out = run_inprocess(["--output-format", "stream-json", "--model", HELLO, "create hello.txt"], project)
    assert out.code == 0, out.stderr
    assert out.events[0]["type"] == "session_started" and out.events[-1]["type"] == "result"


def test_output_format_conflicting_with_json_is_a_usage_error():
    result = invoke("--json", "--output-format", "text", "task")
    assert result.exit_code == 2 and "--json conflicts with --format text" in result.output


def test_short_o_writes_the_last_message(project):
    out = run_mermaid(["exec", "--model", HELLO, "-o", "last.txt", "create hello.txt"], project)
    assert out.code == 0, out.stderr
    assert (project / "last.txt").read_text().strip()
    assert parse("-o", "f.txt", "x").output_last_message == "f.txt"


def test_ephemeral_reaches_the_run_options():
    assert parse("--ephemeral", "task").ephemeral is True
    assert parse("task").ephemeral is False


def test_ephemeral_run_leaves_no_session(project):
    out = run_mermaid(["exec", "--ephemeral", "--model", HELLO, "create hello.txt"], project)
    assert out.code == 0, out.stderr
    assert json.loads(run_mermaid(["sessions", "list", "--json"], project).stdout) == []
    assert not (project / ".mermaid").exists()
    resumed = run_mermaid(["exec", "--ephemeral", "--continue", "--model", HELLO, "again"], project)
    assert resumed.code == 2 and "--ephemeral cannot be used" in resumed.stderr


@pytest.mark.parametrize("args", [["-p", "fix the bug"], ["fix the bug", "-p"], ["-p./sub", "x"]])
def test_p_is_rejected_with_a_hint(args):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert "-p is not a prompt flag here: pass the prompt as an argument" in result.output
    assert "Traceback" not in result.output


def test_path_long_form_still_works(project):
    (project / "sub").mkdir()
    assert parse("--path", "sub", "x").path == "sub"
    out = run_mermaid(["exec", "--path", str(project / "sub"), "--model", HELLO, "create hello.txt"], project)
    assert out.code == 0, out.stderr
    assert (project / "sub" / "hello.txt").exists()


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--allowedTools", "Read", "task"], "allowed_tools"),
        (["--allowed-tools", "Read", "task"], "allowed_tools"),
        (["--allowed-tools=Read", "task"], "allowed_tools"),
        (["--disallowed-tools", "Bash", "task"], "disallowed_tools"),
        (["--disallowedTools", "Bash", "task"], "disallowed_tools"),
    ],
)
def test_tool_allow_deny_flags_are_peer_spellings_of_one_option(args, field):
    assert getattr(parse(*args), field) == [args[0].partition("=")[2] or args[1]]


@pytest.mark.parametrize(
    "flag", ["--allow-untrusted-tool", "--allow-untrusted", "--allow-tools", "--untrusted-tools"]
)
def test_unknown_flag_suggestions_never_name_a_safety_loosening_flag(flag):
    result = invoke(flag, "task")
    assert result.exit_code == 2
    assert "No such option" in result.output
    assert "--allow-untrusted-tools" not in result.output


@pytest.mark.parametrize("flag", ["--allow-tool", "--allowed-tool", "--allowedTool"])
def test_a_typo_never_suggests_the_flag_that_pre_approves_tools(flag):
    result = invoke(flag, "x", "task")
    assert result.exit_code == 2 and "No such option" in result.output
    assert "'--allowed-tools'" not in result.output and "--allowedTools" not in result.output


def test_unknown_flag_suggestions_still_help_otherwise():
    result = invoke("--max-turn", "3", "task")
    assert result.exit_code == 2 and "--max-turns" in result.output


@pytest.mark.parametrize("flag", ["--dangerously-skip-permissions", "--yolo", "--full-auto"])
def test_peer_bypass_flags_point_at_safety_modes(flag):
    result = invoke(flag, "task")
    assert (
        result.exit_code == 2
        and "--safety" in result.output
        and "--allow-untrusted-tools" not in result.output
    )


def test_exec_help_lists_aliases_and_hides_p():
    out = CliRunner().invoke(cli, ["exec", "--help"], prog_name="mermaid").output
    for needle in ("--output-format", "stream-json", "-o, --output-last-message", "--ephemeral"):
        assert needle in out
    assert "-p," not in out and "--path" in out


@pytest.mark.parametrize("flag", ["-p", "--print"])
def test_top_level_p_points_at_exec(flag):
    result = CliRunner().invoke(cli, [flag, "fix the bug"], prog_name="mermaid")
    assert result.exit_code == 2 and 'mermaid exec "TASK"' in result.output
