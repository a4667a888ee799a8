"""`wait_event`: a timed wait on an event that never loses a cancellation."""

from __future__ import annotations

import asyncio

from reconciler.util.polling import wait_event


async def test_wait_event_says_whether_the_event_was_set() -> None:
    event = asyncio.Event()
    assert await wait_event(event, 0.01) is False
    event.set()
    assert await wait_event(event, 5) is True


async def test_a_cancellation_in_the_same_iteration_as_the_event_is_not_swallowed() -> None:
    event = asyncio.Event()
    waiter = asyncio.create_task(wait_event(event, 100))
    await asyncio.sleep(0)  # the waiter is now waiting on the event
    event.set()
    waiter.cancel()
    done, _ = await asyncio.wait([waiter], timeout=5)
    assert done == {waiter}
    assert waiter.cancelled()
