"""The one way to wait: poll a check until it yields a result or a deadline passes.

Readiness, deletion, test-bed start-up and tests all use `poll_until`, so timeouts behave the same
everywhere and a timeout always says what was still missing. The interval grows gently (x1.5 up
to `max_interval`) so short waits are fast and long waits do not hammer the apiserver.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from reconciler.errors import WaitTimeout

T = TypeVar("T")


async def poll_until(
    check: Callable[[], Awaitable[T | None]],
    *,
    timeout: float,
    what: str | Callable[[], str],
    interval: float = 0.05,
    max_interval: float = 1.0,
) -> T:
    """Await `check()` until it returns something other than None/False; return that.

    `what` describes the awaited condition (or is called to describe what is still missing) and
    becomes the message of the `WaitTimeout` raised at the deadline.
    """
    deadline = time.monotonic() + timeout
    delay = interval
    while True:
        result = await check()
        if result is not None and result is not False:
            return result
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            detail = what() if callable(what) else what
            raise WaitTimeout(f"timed out after {timeout:g}s waiting for {detail}")
        await asyncio.sleep(min(delay, remaining))
        delay = min(delay * 1.5, max_interval)


async def wait_event(event: asyncio.Event, timeout: float) -> bool:
    """Wait until `event` is set or `timeout` seconds pass; True when it was set.

    Not `asyncio.wait_for`: on Python 3.11 it swallows a cancellation that arrives in the same
    loop iteration as the event (gh-86296), so a loop waiting this way could never be stopped
    (the operator's work queue hung a whole stop that way). `asyncio.timeout` re-raises it.
    """
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return event.is_set()
    return True
