"""The one skeleton of the engine's background loops (scheduler, bookkeeper, cleaner, telemetry).

`run_every` repeats a tick until stopped, pausing between ticks on a wake-up channel or the stop
event; an exception in a tick is logged and the next tick retries. `each` runs a tick's per-item
work so that one bad item (a row that cannot be finished, a cluster that cannot be scheduled) is
logged with its identity and skipped: it never blocks the items behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

import structlog

log = structlog.get_logger()
T = TypeVar("T")
Pause = Callable[[float], Awaitable[None]]


async def run_every(
    name: str,
    interval: float,
    tick: Callable[[], Awaitable[object]],
    stop: asyncio.Event,
    *,
    pause: Pause | None = None,
) -> None:
    """Call `tick` until `stop` is set, then pause `interval` seconds (or until `pause` returns:
    a notifier channel wakes the loop early; the engine wakes every channel when it stops)."""

    async def until_stopped(timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout)

    wait = pause or until_stopped
    while not stop.is_set():
        try:
            await tick()
        except Exception as exc:  # keep going: the next tick retries
            log.exception(f"{name} failed", error=str(exc))
        if not stop.is_set():
            await wait(interval)


async def each(
    what: str,
    items: Iterable[T],
    handle: Callable[[T], Awaitable[object]],
    describe: Callable[[T], dict[str, object]],
) -> int:
    """Run `handle` on every item; log and skip the ones that fail. Returns how many succeeded."""
    succeeded = 0
    for item in items:
        try:
            await handle(item)
        except Exception as exc:
            log.exception(f"{what} failed", error=str(exc), **describe(item))
        else:
            succeeded += 1
    return succeeded
