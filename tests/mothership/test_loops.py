"""The loop skeleton: a failing tick or item is logged and skipped, never the end of the loop."""

from __future__ import annotations

import asyncio

from reconciler.mothership.loops import each, run_every
from reconciler.util.polling import poll_until


async def test_one_failing_item_does_not_stop_the_items_after_it() -> None:
    handled: list[int] = []

    async def handle(item: int) -> None:
        if item == 1:
            raise RuntimeError("bad row")
        handled.append(item)

    succeeded = await each("handling", [0, 1, 2, 3], handle, lambda item: {"item": item})
    assert (succeeded, handled) == (3, [0, 2, 3])


async def test_loop_survives_a_failing_tick_and_ends_when_stopped() -> None:
    stop = asyncio.Event()
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        ticks += 1
        if ticks == 1:
            raise RuntimeError("database hiccup")

    async def three_ticks() -> bool:
        return ticks >= 3

    loop = asyncio.create_task(run_every("ticking", 0.01, tick, stop))
    await poll_until(three_ticks, timeout=10, what="three ticks")
    stop.set()
    await asyncio.wait_for(loop, 10)
