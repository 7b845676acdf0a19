"""`BodyEncoder` is byte for byte `encode(body)`, turn after turn, whatever the providers reuse:
kept objects are encoded once, anything new or merely equal is encoded again."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mermaid_cli.core.kept import LastMade
from mermaid_cli.providers.http import BodyEncoder, encode

scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.text(max_size=4)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(
    turns=st.lists(
        st.tuples(values, values, st.lists(values, min_size=1, max_size=3)), min_size=1, max_size=5
    ),
    reuse=st.lists(st.booleans(), min_size=5, max_size=5),
)
def test_every_request_is_the_bodys_own_encoding(turns, reuse) -> None:
    encoder = BodyEncoder("messages")
    messages: list[object] = []
    tools = system = None
    for n, (new_tools, new_system, new_messages) in enumerate(turns):
        if not (reuse[n] and tools is not None):
            tools, system = new_tools, new_system
        messages = [*messages, *new_messages]  # the items so far are the same objects
        body = {"model": "m", "system": system, "tools": tools, "messages": messages}
        assert encoder.encode(body) == encode(body)


def test_an_equal_value_of_another_type_is_encoded_again() -> None:
    encoder = BodyEncoder("messages")
    first = {"tools": [{"default": 1}], "messages": [{"a": 1}]}
    second = {"tools": [{"default": True}], "messages": first["messages"]}
    assert first["tools"] == second["tools"]
    encoder.encode(first)
    assert encoder.encode(second) == encode(second)


def test_last_made_remakes_when_any_input_is_another_object() -> None:
    made: list[int] = []
    last: LastMade[int] = LastMade()
    spec_a, spec_b = ["a"], ["a"]
    for inputs in [(spec_a, True), (spec_a, True), (spec_b, True), (spec_b, False)]:
        last.get(inputs, lambda: made.append(len(made)) or len(made))
    assert made == [0, 1, 2]  # equal but not the same list: made again


def test_kept_forms_makes_each_item_once_while_it_stays() -> None:
    from mermaid_cli.core.kept import KeptForms

    made: list[str] = []
    kept: KeptForms[list[str], str] = KeptForms()

    def make(item: list[str]) -> str:
        made.append(item[0])
        return item[0].upper()

    a, b, c, d = ["a"], ["b"], ["c"], ["d"]
    assert kept.forms([a, b], "k", make) == ["A", "B"]
    assert kept.forms([a, b, c], "k", make) == ["A", "B", "C"]  # appended: only c is new
    assert kept.forms([d, c], "k", make) == ["D", "C"]  # compacted: c is still kept
    assert kept.forms([d, c], "other", make) == ["D", "C"]  # another key: all made again
    assert kept.forms([["c"], d], "other", make) == ["C", "D"]  # an equal item is not the same item
    assert made == ["a", "b", "c", "d", "d", "c", "c"]
