"""Identity caches for what is rebuilt every turn from the same objects: a conversation's items,
the tools' specs. A hit needs the very object (`is`), never an equal one: equal values can still
encode differently (1 == True == 1.0), and requests must repeat byte for byte to be cached."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import is_
from typing import Generic, TypeVar

I = TypeVar("I")  # noqa: E741 - an item
W = TypeVar("W")


class KeptForms(Generic[I, W]):
    """What was made of each item (a message's wire form, an item's encoding), kept between turns
    by the item's identity and `key` (what else it depends on): the conversation's items are the
    same objects turn after turn, so each is made once. Only the last call's items stay kept. A
    kept result is never mutated."""

    def __init__(self) -> None:
        self._items: list[I] = []
        self._forms: list[W] = []
        self._key: object = None

    def forms(self, items: Sequence[I], key: object, make: Callable[[I], W]) -> list[W]:
        kept = len(self._items)
        if key == self._key and len(items) >= kept and all(map(is_, items, self._items)):
            # the usual turn: the same conversation with items appended (one C-level scan)
            made = [*self._forms, *(make(item) for item in items[kept:])]
        else:  # compacted, edited or another key: reuse what is still the same, item by item
            by_id = (
                {id(i): (i, f) for i, f in zip(self._items, self._forms, strict=True)}
                if key == self._key
                else {}
            )
            made = []
            for item in items:
                hit = by_id.get(id(item))
                made.append(hit[1] if hit is not None and hit[0] is item else make(item))
        self._items, self._forms, self._key = list(items), made, key
        return list(made)


class LastMade(Generic[W]):
    """The last thing made from some inputs, made again only when they are not the same objects
    as last time: a provider's tools and system prompt are made once from the specs it is handed
    turn after turn, and stay the same objects (`BodyEncoder` then encodes them once too)."""

    def __init__(self) -> None:
        self._last: tuple[tuple[object, ...], W] | None = None

    def get(self, inputs: tuple[object, ...], make: Callable[[], W]) -> W:
        last = self._last
        if (
            last is not None
            and len(last[0]) == len(inputs)
            and all(a is b for a, b in zip(last[0], inputs, strict=True))
        ):
            return last[1]
        made = make()
        self._last = (inputs, made)
        return made
