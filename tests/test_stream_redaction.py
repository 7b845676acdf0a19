"""Secrets split across streamed `text` deltas cannot be rebuilt by joining the deltas (issue 15),
and `--diff-out` is redacted."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from conftest import call, run_inprocess, say, write_script
from hypothesis import given, settings
from hypothesis import strategies as st

from mermaid_cli.security.redact import PLACEHOLDER, Redactor, StreamRedactor

SECRET = "hunter2-very-secret-value-123"
TOKEN = "sk-ant-" + "A1b2C3d4E5f6G7h8I9j0"


def _stream(text: str, cuts: list[int], redactor: Redactor) -> list[str]:
    stream = StreamRedactor(redactor.redact, lambda: redactor.secrets)
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces = [text[a:b] for a, b in itertools.pairwise([0, *points, len(text)])]
    out = [stream.feed(redactor.redact(p)) for p in pieces]  # the agent redacts each delta too
    return [*out, stream.flush()]


@settings(max_examples=300, deadline=None)
@given(
    before=st.text(alphabet="ab -\n.", max_size=20),
    after=st.text(alphabet="ab -\n.", max_size=20),
    which=st.sampled_from([SECRET, TOKEN, f"Bearer {SECRET[:12]}xyz", "sk-proj-" + "q" * 30]),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8),
)
def test_joined_deltas_never_contain_a_secret(before: str, after: str, which: str, cuts: list[int]) -> None:
    redactor = Redactor([SECRET])
    text = f"{before} {which} {after}"  # the shapes start at a word boundary
    joined = "".join(_stream(text, cuts, redactor))
    assert which not in joined and SECRET not in joined and TOKEN not in joined
    assert "sk-proj-qqqq" not in joined
    assert PLACEHOLDER in joined


def test_plain_text_streams_whole() -> None:
    redactor = Redactor([SECRET])
    text = "Hello there, nothing secret here.\nBye."
    assert "".join(_stream(text, [3, 9, 17, 30], redactor)) == text


def test_split_secret_in_a_run_is_not_rebuilt_from_text_events(project: Path, isolated_env: Path) -> None:
    half = len(SECRET) // 2
    turn = {
        "content": [
            {"type": "text", "text": "the password is " + SECRET[:half]},
            {"type": "text", "text": SECRET[half:] + " ok"},
        ],
        "stop_reason": "stop",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    script = write_script(project / "s.jsonl", [turn])
    out = run_inprocess(
        ["--json", "--model", f"replay/{script}", "go"], project, env={"MERMAID_MASK": SECRET}
    )
    assert out.code == 0, out.stderr
    deltas = "".join(e["delta"] for e in out.events if e["type"] == "text")
    assert SECRET not in deltas and PLACEHOLDER in deltas
    assert SECRET not in out.stdout


def test_diff_out_is_redacted(project: Path) -> None:
    script = write_script(
        project / "s.jsonl",
        [call("write_file", {"path": "cfg.txt", "content": f"token = {TOKEN}\n"}), say("done")],
    )
    out = run_inprocess(
        ["--json", "--safety", "full_access", "--diff-out", "d.diff", "--model", f"replay/{script}", "go"],
        project,
    )
    assert out.code == 0, out.stderr
    diff = (project / "d.diff").read_text()
    assert "cfg.txt" in diff and TOKEN not in diff and PLACEHOLDER in diff
    assert TOKEN not in json.dumps(out.events)


def test_a_long_stream_is_not_held_to_the_end() -> None:
    """Hold-back delays only the tail: a long answer keeps streaming."""
    redactor = Redactor([SECRET])
    stream = StreamRedactor(redactor.redact, lambda: redactor.secrets)
    emitted = [stream.feed("word " * 40 + "wo") for _ in range(5)]
    # at most MAX_WHOLE_HOLD (512) characters wait; the rest went out before the end
    assert sum(len(e) for e in emitted) >= 5 * 202 - StreamRedactor.MAX_WHOLE_HOLD
    assert all(e == "" or e.endswith("word") for e in emitted)  # never cut inside a word
    assert "".join(emitted) + stream.flush() == ("word " * 40 + "wo") * 5


# A key with no token shape: only the run's known secret values can catch it.
PLAIN_KEY = "Zq9xW2mK7pL4vN8rT5"


def test_no_event_field_carries_a_secret_to_stdout(project: Path) -> None:
    """Every field of every event is redacted, not only those redacted where they are made: a
    tool name the model invented, a gate's reason quoting the command, `result.blocked` and
    `result.errors` quoted the key verbatim."""
    script = write_script(
        project / "s.jsonl",
        [
            call(f"nonexistent_tool_{PLAIN_KEY}", {}, call_id="c1"),
            call("write_file", {"path": f"/etc/{PLAIN_KEY}", "content": "x"}, call_id="c2"),
            call("execute_command", {"command": f"echo {PLAIN_KEY} > f.txt"}, call_id="c3"),
            say("done"),
        ],
    )
    for fmt in ("--json", "--output-format=json"):
        out = run_inprocess(
            [fmt, "--safety", "read_only", "--model", f"replay/{script}", "go"],
            project,
            env={"ANTHROPIC_API_KEY": PLAIN_KEY},
        )
        assert out.code == 0, out.stderr
        assert PLAIN_KEY not in out.stdout, fmt
        assert PLACEHOLDER in out.stdout, fmt


def test_a_long_unbroken_run_streams_in_linear_time_and_hides_its_secrets() -> None:
    """A base64 answer in 24-character deltas was held whole and rescanned on every delta: 4,000
    deltas took 70 s on the event loop's thread, past --timeout. No token is 1,024 characters
    long: past that a run's head goes out."""
    redactor = Redactor([SECRET])
    stream = StreamRedactor(redactor.redact, lambda: redactor.secrets)
    text = "QUJD/EVGR0h+SktM" * 500 + SECRET + "A" * 5000 + TOKEN + "B" * 3000
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    emitted = [stream.feed(p) for p in pieces]
    assert sum(len(e) for e in emitted) > len(text) - 2 * 1024 - len(SECRET)  # it streamed
    joined = "".join(emitted) + stream.flush()
    assert SECRET not in joined and joined.count(PLACEHOLDER) == 1  # the token inside the run is data
    assert joined.startswith("QUJD/EVGR0h+SktM" * 500)
