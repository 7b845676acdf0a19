"""A session's event lines: the value the run already encoded for stdout is spliced into the line
(`append_encoded`), and the line must be exactly the one `append` would have written."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mermaid_cli.store.sessions import SessionWriter

CLOCK = datetime(2026, 12, 1, 12, 0, 0, 123456, tzinfo=UTC)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _writer(path: Path) -> SessionWriter:
    return SessionWriter(path, redact=lambda s: s.replace("sk-secret", "***"), clock=lambda: CLOCK)


@settings(max_examples=200, deadline=None)
@given(value=st.dictionaries(st.text(max_size=8), json_values, max_size=5))
def test_a_spliced_event_line_is_the_line_append_writes(tmp_path_factory, value) -> None:
    folder = tmp_path_factory.mktemp("s")
    plain, spliced = _writer(folder / "a.jsonl"), _writer(folder / "b.jsonl")
    plain.append("event", event=value)
    spliced.append_encoded("event", "event", json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    plain.close()
    spliced.close()
    assert (folder / "a.jsonl").read_bytes() == (folder / "b.jsonl").read_bytes()


def test_a_spliced_line_is_redacted_and_numbered_like_any_other(tmp_path: Path) -> None:
    writer = _writer(tmp_path / "s.jsonl")
    writer.append("meta", note="first")
    writer.append_encoded("event", "event", '{"type":"error","message":"key sk-secret leaked"}')
    writer.close()
    lines = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert [line["seq"] for line in lines] == [1, 2]
    assert lines[1]["event"] == {"type": "error", "message": "key *** leaked"}


def test_a_full_disk_ends_the_session_file_at_its_last_whole_line(tmp_path):
    """ENOSPC mid-line left a torn line and ended the run with exit 70; now the file goes back to
    its last whole line, the loss is reported once, and the run goes on."""
    import errno

    path = tmp_path / "s.jsonl"
    writer = SessionWriter(path)
    writer.append("started", session_id="s")
    whole = path.read_bytes()
    real = writer._fh

    class FullDisk:
        def __init__(self) -> None:
            self.calls = 0

        def write(self, data):
            self.calls += 1
            if self.calls == 1:
                return real.write(data[: len(data) // 2])  # part of the line lands
            raise OSError(errno.ENOSPC, "No space left on device")

        def fileno(self):
            return real.fileno()

        def close(self):
            real.close()

    reported: list[str] = []
    writer.on_lost = reported.append
    writer._fh = FullDisk()  # type: ignore[assignment]
    writer.append("run", model="m")
    writer.append("run", model="m")  # nothing more is tried
    writer.close()
    assert path.read_bytes() == whole
    assert len(reported) == 1 and "No space left" in reported[0]
    assert writer._fh.calls == 2  # type: ignore[attr-defined]


def test_a_session_written_by_one_run_is_refused_to_another(tmp_path):
    """Two concurrent `--resume` of one session both appended: indices twice, one run lost."""
    import pytest

    from mermaid_cli.core.errors import UsageError

    path = tmp_path / "s.jsonl"
    first = SessionWriter(path)
    with pytest.raises(UsageError, match="in use by another run"):
        SessionWriter(path)
    first.close()
    SessionWriter(path).close()  # free again once the first run ended
