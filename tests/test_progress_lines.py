"""Progress on stderr shows what the model chose and never lets the terminal obey it: no escape
sequence (a title, a clipboard write) and no newline (a forged `mermaid:` line) gets through."""

from __future__ import annotations

from pathlib import Path

from conftest import call, run_inprocess, say, write_script

HOSTILE = "a\x1b[31mRED\x1b]0;pwned\x07\nmermaid: tool#9 ok: fake"


def test_a_hostile_path_reaches_stderr_as_one_visible_line(project: Path, tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.jsonl",
        [
            call("write_file", {"path": HOSTILE, "content": "x"}, call_id="c1"),
            call("execute_command", {"command": "printf 'out\\033]0;pwned\\007\\n'"}, call_id="c2"),
            say("done"),
        ],
    )
    out = run_inprocess(["--json", "--safety", "full_access", "--model", f"replay/{script}", "go"], project)
    assert out.code == 0, out.stderr
    assert "\x1b" not in out.stderr and "\x07" not in out.stderr
    assert not any(line.startswith("mermaid: tool#9") for line in out.stderr.splitlines())
    assert "\\x1b[31mRED" in out.stderr  # shown, escaped
