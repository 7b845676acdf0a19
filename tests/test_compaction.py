"""The pure parts of compaction: trigger, summary request, history cut, error heuristics."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mermaid_cli.agent.compaction import (
    CHECKPOINT_HEADER,
    SUMMARY_PROMPT,
    apply_compaction,
    build_summary_request,
    is_context_too_long_error,
    should_compact,
)
from mermaid_cli.config.sections.longrun import CompactionSection, MemorySection
from mermaid_cli.core.errors import ContextTooLong, ProviderError
from mermaid_cli.core.types import Message, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock


def assistant(text: str = "", *calls: tuple[str, str]) -> Message:
    blocks: list = [TextBlock(text=text)] if text else []
    blocks += [ToolCallBlock(id=cid, name=name, arguments={"path": f"{cid}.py"}) for cid, name in calls]
    return Message(role="assistant", content=tuple(blocks))


def results(*pairs: tuple[str, str]) -> Message:
    return Message(
        role="user", content=tuple(ToolResultBlock(call_id=cid, content=out) for cid, out in pairs)
    )


def run_of(rounds: int) -> list[Message]:
    """A headless run: one prompt, then model rounds each with a tool call and its result."""
    msgs = [Message.user_text("Fix the failing test in tests/test_x.py")]
    for i in range(rounds):
        msgs.append(assistant(f"step {i}", (f"c{i}", "read_file")))
        msgs.append(results((f"c{i}", f"output {i}")))
    return msgs


def check_well_formed(msgs: list[Message]) -> None:
    seen_calls: set[str] = set()
    for m in msgs:
        for b in m.content:
            if isinstance(b, ToolCallBlock):
                seen_calls.add(b.id)
            if isinstance(b, ToolResultBlock):
                assert b.call_id in seen_calls, f"orphan tool result {b.call_id}"
    assert msgs[0].role == "user"
    for a, b in zip(msgs, msgs[1:], strict=False):
        assert a.role != b.role, "roles must alternate"


@pytest.mark.parametrize(
    ("tokens", "window", "percent", "expected"),
    [
        (84_999, 100_000, 85, False),
        (85_000, 100_000, 85, True),
        (200_000, 100_000, 85, True),
        (0, 100_000, 85, False),
        (10, 0, 85, False),
        (100, 100, 100, True),
        (99, 100, 100, False),
        (1, 100, 1, True),
    ],
)
def test_should_compact(tokens, window, percent, expected):
    assert should_compact(tokens, window, percent) is expected


def test_summary_prompt_has_the_fixed_structure():
    sections = ["## Goal", "## Decisions", "## Files touched", "## Open items"]
    positions = [SUMMARY_PROMPT.index(s) for s in sections]
    assert positions == sorted(positions)


def test_summary_request_is_one_plain_user_message():
    msgs = run_of(3)
    msgs[2] = results(("c0", "A" * 10_000 + "MIDDLE" + "Z" * 10_000))
    msgs.append(
        Message(role="assistant", content=(ReasoningBlock(text="private thoughts"), TextBlock(text="done")))
    )
    request = build_summary_request(msgs, "keep the failing assertion")
    assert request.tools == ()
    assert len(request.messages) == 1 and request.messages[0].role == "user"
    text = request.messages[0].text
    assert "Fix the failing test in tests/test_x.py" in text
    assert '[1 tool call read_file] {"path": "c0.py"}' in text
    assert "[2 read_file result]" in text
    assert "MIDDLE" not in text and "characters omitted" in text
    assert "private thoughts" not in text and "done" in text
    assert text.endswith("Focus for this summary (keep it in detail): keep the failing assertion")
    assert SUMMARY_PROMPT in text
    assert "Focus for this summary" not in build_summary_request(msgs, None).messages[0].text
    capped = build_summary_request(run_of(200), "", max_chars=5000).messages[0].text
    assert len(capped) < 5000 + len(SUMMARY_PROMPT) + 200


def test_apply_keeps_last_rounds_and_pairs():
    msgs = run_of(6)  # 13 messages
    new, removed = apply_compaction(msgs, "## Goal\nfix it", keep_tail_turns=2)
    assert removed == list(range(9))
    assert new[0].role == "user" and new[0].text.startswith(CHECKPOINT_HEADER)
    assert "## Goal\nfix it" in new[0].text
    assert new[1:] == msgs[9:]
    check_well_formed(new)


def test_apply_with_no_tail_keeps_only_the_checkpoint():
    msgs = run_of(3)
    new, removed = apply_compaction(msgs, "summary", keep_tail_turns=0)
    assert removed == list(range(len(msgs)))
    assert len(new) == 1 and "summary" in new[0].text


def test_apply_removes_nothing_when_history_is_short():
    msgs = run_of(2)
    new, removed = apply_compaction(msgs, "summary", keep_tail_turns=2)
    assert removed == [0] and new[1:] == msgs[1:]  # only the prompt goes
    new, removed = apply_compaction(msgs, "summary", keep_tail_turns=5)
    assert removed == [] and new == msgs


def test_apply_refuses_an_empty_summary():
    with pytest.raises(ValueError):
        apply_compaction(run_of(5), "  \n", keep_tail_turns=1)


def test_cut_moves_back_to_keep_a_result_with_its_call():
    msgs = [
        Message.user_text("go"),
        assistant("a", ("c1", "execute_command")),
        results(("c1", "r1")),
        assistant("b", ("c2", "read_file")),
        Message(role="user", content=(TextBlock(text="late"),)),
        assistant("c"),
        results(("c2", "r2")),  # answers a call two rounds back
    ]
    new, removed = apply_compaction(msgs, "s", keep_tail_turns=1)
    assert removed == [0, 1, 2]
    assert new[1:] == msgs[3:]


def test_max_tail_chars_keeps_fewer_rounds():
    msgs = run_of(5)
    msgs[-1] = results(("c4", "x" * 50_000))
    new, removed = apply_compaction(msgs, "s", keep_tail_turns=2, max_tail_chars=10_000)
    assert len(new) == 1 and removed == list(range(len(msgs)))
    msgs = run_of(5)
    new, removed = apply_compaction(msgs, "s", keep_tail_turns=3, max_tail_chars=70)
    # each round is 31 characters (text, call arguments, result): two rounds fit, three do not
    assert new[1:] == msgs[-4:]


@st.composite
def conversations(draw):
    msgs = [Message.user_text("task")]
    n = 0
    for _ in range(draw(st.integers(min_value=0, max_value=12))):
        calls = [(f"c{n + k}", "t") for k in range(draw(st.integers(min_value=0, max_value=3)))]
        n += len(calls)
        msgs.append(assistant(draw(st.text(max_size=5)) or "x", *calls))
        if calls:
            msgs.append(results(*[(cid, "out") for cid, _ in calls]))
        else:
            msgs.append(Message.user_text("continue"))
    return msgs


@settings(max_examples=150, deadline=None)
@given(msgs=conversations(), keep=st.integers(min_value=0, max_value=5), cap=st.none() | st.integers(0, 100))
def test_apply_always_yields_a_valid_history(msgs, keep, cap):
    new, removed = apply_compaction(msgs, "summary", keep_tail_turns=keep, max_tail_chars=cap)
    check_well_formed(new)
    if removed:
        assert removed == list(range(len(removed)))
        assert new[1:] == msgs[len(removed) :]
    else:
        assert new == msgs


@pytest.mark.parametrize(
    "message",
    [
        "prompt is too long: 210000 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000, decrease input length",
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
        "Error code: 400 - {'error': {'code': 'context_length_exceeded'}}",
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        "Input is too long for requested model.",
        "the request exceeds the available context size, try increasing it",
        "Please reduce the length of the messages or completion.",
        "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
    ],
)
def test_context_too_long_messages(message):
    assert is_context_too_long_error(message)


@pytest.mark.parametrize(
    "message",
    [
        "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 45000.",
        "Rate limit reached: too many tokens per minute",
        "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens",
        "invalid x-api-key",
        "Overloaded",
        "You exceeded your current quota, please check your plan",
    ],
)
def test_other_errors_are_not_context_too_long(message):
    assert not is_context_too_long_error(message)


def test_error_objects():
    assert is_context_too_long_error(ContextTooLong("whatever"))
    assert is_context_too_long_error(ProviderError("x", code="context_length"))
    assert is_context_too_long_error(ProviderError("prompt is too long: 5 > 4"))
    assert not is_context_too_long_error(ProviderError("bad gateway", status_code=502))


def test_settings_sections():
    c = CompactionSection()
    assert (c.auto_enabled, c.auto_threshold_percent, c.tail_turns, c.max_truncation_recoveries) == (
        True,
        85,
        2,
        3,
    )
    m = MemorySection()
    assert (m.enabled, m.index_cap_bytes) == (True, 8000)
    for bad in [
        {"auto_threshold_percent": 0},
        {"auto_threshold_percent": 101},
        {"tail_turns": -1},
        {"nope": 1},
    ]:
        with pytest.raises(ValidationError):
            CompactionSection(**bad)
    with pytest.raises(ValidationError):
        MemorySection(index_cap_bytes=-1)


# --- images: limited when a result is added, freed by compaction ----------------------------------


def _shots(call_id: str, n: int) -> ToolResultBlock:
    from mermaid_cli.core.types import ImageData

    image = ImageData(media_type="image/png", data="iVBORw0KGgo=")
    return ToolResultBlock(call_id=call_id, content="shot", images=(image,) * n)


def test_admit_images_cuts_only_the_new_message():
    from mermaid_cli.agent.compaction import CONTEXT_IMAGES, admit_images, image_count

    history = [
        Message.user_text("go"),
        assistant("", ("a", "read_file")),
        Message(role="user", content=(_shots("a", CONTEXT_IMAGES - 2),)),
    ]
    new = Message(role="user", content=(_shots("b", 3), _shots("c", 2)))
    admitted = admit_images(new, history)
    assert image_count(history + [admitted]) == CONTEXT_IMAGES
    first, second = admitted.content
    assert len(first.images) == 2 and "1 image(s) not attached" in first.content
    assert second.images == () and "2 image(s) not attached" in second.content
    small = Message(role="user", content=(_shots("d", 1),))
    assert admit_images(small, history) is small  # within the limit: the very same message


def test_compaction_leaves_few_images_in_the_tail():
    from mermaid_cli.agent.compaction import TAIL_IMAGES, image_count, images_due

    history = [Message.user_text("go")]
    for n in range(3):
        history += [assistant("", (f"c{n}", "computer")), Message(role="user", content=(_shots(f"c{n}", 4),))]
    assert images_due(history)
    kept, removed = apply_compaction(history, "## Goal\nx", 2)
    assert removed and image_count(kept) <= TAIL_IMAGES
    assert kept[-1] == history[-1]  # the newest screenshot stays
