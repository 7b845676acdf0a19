"""core/gather.gather_all: nothing it started outlives it, whether it ends by a result, an error or
a cancellation (asyncio.gather returns at the first cancelled or failed child)."""

from __future__ import annotations

import asyncio

import pytest

from mermaid_cli.core.gather import gather_all


async def _slow_to_stop(log: list[str], name: str, stop_secs: float) -> str:
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        await asyncio.sleep(stop_secs)  # a process tree being killed, a session closing
        log.append(name)
        raise
    return name


async def test_results_come_in_the_order_given():
    async def after(secs: float, value: int) -> int:
        await asyncio.sleep(secs)
        return value

    assert await gather_all(after(0.03, 1), after(0.0, 2), after(0.01, 3)) == [1, 2, 3]
    assert await gather_all() == []


async def test_a_cancelled_caller_resumes_only_once_every_call_has_stopped():
    stopped: list[str] = []
    outer = asyncio.ensure_future(
        gather_all(_slow_to_stop(stopped, "quick", 0.0), _slow_to_stop(stopped, "slow", 0.2))
    )
    await asyncio.sleep(0.05)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert sorted(stopped) == ["quick", "slow"]


async def test_an_error_stops_the_others_before_it_is_raised():
    stopped: list[str] = []

    async def fails() -> None:
        await asyncio.sleep(0.05)
        raise ValueError("bug")

    with pytest.raises(ValueError, match="bug"):
        await gather_all(_slow_to_stop(stopped, "sibling", 0.1), fails())
    assert stopped == ["sibling"]
