"""Side commands and startup hygiene: sessions, config show, record/replay, lazy imports."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import FIXTURES, call, run_inprocess, run_mermaid, say, write_script

HEAVY = ("httpx", "anthropic", "openai", "rich", "mcp", "trafilatura", "keyring", "pydantic", "tomli_w", "botocore")
# What `--version`, `--help` and `exec --help` may import of Mermaid: the group, its flag
# module and the lazy table, no command module and nothing below the CLI layer.
CLI_CORE = [
    "mermaid_cli",
    "mermaid_cli.cli",
    "mermaid_cli.cli.exec_run",  # what `exec` runs once parsed (imports nothing heavy at the top)
    "mermaid_cli.cli.generated_code",  # the kept dataclass code, installed before any command
    "mermaid_cli.cli.lazy",
    "mermaid_cli.cli.main",
    "mermaid_cli.cli.peer_flags",
    "mermaid_cli.core",
    "mermaid_cli.core.cache_files",
]


def imported_after(argv_list: list[list[str]], cwd) -> tuple[list[str], list[str]]:
    """(heavy third-party modules, mermaid_cli modules) imported by running each argv in one process."""
    probe = (
        "import json, sys\n"
        "from mermaid_cli.cli.main import cli\n"
        f"for argv in {argv_list!r}:\n"
        "    try:\n"
        "        cli.main(argv, prog_name='mermaid', standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "ours = sorted(m for m in sys.modules if m.startswith('mermaid_cli'))\n"
        "print('PROBE ' + json.dumps([heavy, ours]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd)
    found = [line for line in proc.stdout.splitlines() if line.startswith("PROBE ")]
    assert found, proc.stdout + proc.stderr
    heavy, ours = json.loads(found[-1].removeprefix("PROBE "))
    return heavy, ours


def test_help_and_version_import_no_heavy_modules(project):
    heavy, ours = imported_after([["--version"], ["exec", "--help"], ["--help"], ["run", "--help"]], project)
    assert heavy == []
    assert ours == CLI_CORE


def test_a_command_imports_only_its_own_module_for_help(project):
    heavy, ours = imported_after([["sessions", "--help"], ["config", "show", "--help"]], project)
    assert heavy == []
    assert ours == sorted([*CLI_CORE, "mermaid_cli.cli.sessions", "mermaid_cli.cli.config"])


def test_top_level_help_lists_every_command_from_the_table():
    from click.testing import CliRunner

    from mermaid_cli.cli.lazy import COMMANDS, load_command
    from mermaid_cli.cli.main import cli

    out = CliRunner().invoke(cli, ["--help"], prog_name="mermaid", terminal_width=200).output
    listed = {
        line.split()[0]: line.split(None, 1)[1]
        for line in out.split("Commands:")[1].splitlines()
        if line.strip()
    }
    assert set(listed) == {*COMMANDS, "exec", "run"}
    for name, entry in COMMANDS.items():
        assert listed[name] == entry.short_help
        command = load_command(name)  # every table entry names a real click command of that name
        assert command.name == name


def test_exec_help_teaches(project):
    out = run_mermaid(["exec", "--help"], project)
    assert out.code == 0
    for needle in ("--json", "--max-cost", "--resume", "Exit codes", "replay/"):
        assert needle in out.stdout


def test_record_then_replay_gives_the_same_run(project):
    script = write_script(
        project / "s.jsonl", [call("write_file", {"path": "a.txt", "content": "A"}), say("done")]
    )
    first = run_inprocess(["--json", "--record", "rec.jsonl", "--model", f"replay/{script}", "go"], project)
    assert first.code == 0
    (project / "a.txt").unlink()
    second = run_inprocess(["--json", "--model", f"replay/{project / 'rec.jsonl'}", "go"], project)
    assert second.code == 0 and (project / "a.txt").read_text() == "A"

    def strip(evs):
        drop = ("session_id", "model", "duration_ms")
        return [{k: v for k, v in e.items() if k not in drop} for e in evs]

    assert strip(first.events[1:]) == strip(second.events[1:])
    header = json.loads((project / "rec.jsonl").read_text().splitlines()[0])
    assert header["type"] == "header" and header["format"] == "mermaid-recording"


def test_sessions_list_and_show(project):
    run_mermaid(["exec", "--model", f"replay/{FIXTURES}/demo/hello.jsonl", "create hello.txt"], project)
    listing = run_mermaid(["sessions", "list", "--json"], project)
    rows = json.loads(listing.stdout)
    assert len(rows) == 1 and rows[0]["title"] == "create hello.txt" and rows[0]["messages"] == 4
    # the session file's `started` record names the model (it once went unwritten)
    assert rows[0]["model"].startswith("replay/") and rows[0]["model"].endswith("hello.jsonl")
    shown = run_mermaid(["sessions", "show", rows[0]["session_id"], "--json"], project)
    payload = json.loads(shown.stdout)
    assert payload["model"] == rows[0]["model"]
    assert payload["messages"][1]["content"][1]["name"] == "write_file"
    text = run_mermaid(["sessions", "show", rows[0]["session_id"]], project)
    assert "tool call write_file" in text.stdout
    missing = run_mermaid(["sessions", "show", "nope"], project)
    assert missing.code == 2 and "not found" in missing.stderr


def test_config_show_reports_sources(project, isolated_env):
    cfg = isolated_env / "config" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("[run]\nmax_turns = 9\n")
    out = run_mermaid(["config", "show", "--json", "-c", "run.timeout=30"], project)
    data = json.loads(out.stdout)["settings"]
    assert data["run.max_turns"] == {"value": 9, "source": str(cfg)}
    assert data["run.timeout"] == {"value": 30, "source": "-c run.timeout"}
    bad = run_mermaid(["config", "show", "-c", "run.nope=1"], project)
    assert bad.code == 2 and "run.nope: unknown key" in bad.stderr


def test_config_show_text_is_toml(project, isolated_env):
    import tomllib

    cfg = isolated_env / "config" / "config.toml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(
        '[run]\nmax_turns = 9\n[providers.local]\nbase_url = "http://127.0.0.1:1/v1"\napi_key_env = "LOCAL_KEY"\n'
        '[pricing."local/m"]\ninput = 1.5\noutput = 2\n'
    )
    out = run_mermaid(["config", "show"], project)
    assert out.code == 0, out.stderr
    parsed = tomllib.loads(out.stdout)  # `model = null` once made this fail
    assert parsed["run"]["max_turns"] == 9
    assert parsed["providers"]["local"]["base_url"] == "http://127.0.0.1:1/v1"
    assert parsed["pricing"]["local/m"]["input"] == 1.5
    assert "model" not in parsed and "# model is not set" in out.stdout
