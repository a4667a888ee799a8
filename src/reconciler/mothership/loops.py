"""The one skeleton of the engine's background loops (scheduler, bookkeeper, cleaner, telemetry).

`run_every` repeats a tick until stopped, pausing between ticks on a wake-up channel or the stop
event; an exception in a tick is logged and the next tick retries. `each` runs a tick's per-item
work so that one bad item (a row that cannot be finished, a cluster that cannot be scheduled) is
logged with its identity and skipped: it never blocks the items behind it. `retry_transient`
carries one database call over a short outage (a PostgreSQL restart) instead of failing it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

import structlog

from reconciler.store.db import is_transient
from reconciler.util.backoff import delays
from reconciler.util.polling import wait_event

log = structlog.get_logger()
T = TypeVar("T")
Pause = Callable[[float], Awaitable[None]]


def _failed(what: str, exc: Exception, **context: object) -> None:
    """A database outage is expected and short: one line. Anything else gets its traceback."""
    if is_transient(exc):
        log.warning(f"{what} failed", error=str(exc), **context)
    else:
        log.exception(f"{what} failed", error=str(exc), **context)


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
        await wait_event(stop, timeout)

    wait = pause or until_stopped
    while not stop.is_set():
        try:
            await tick()
        except Exception as exc:  # keep going: the next tick retries
            _failed(name, exc)
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
            _failed(what, exc, **describe(item))
        else:
            succeeded += 1
    return succeeded


async def retry_transient(
    what: str,
    call: Callable[[], Awaitable[T]],
    *,
    give_up_at: float,
    first_delay: float = 0.1,
    max_delay: float = 2.0,
) -> T:
    """Await `call()`, trying again with exponential backoff while it fails with a transient
    database error and the monotonic clock is before `give_up_at`; then raise the last error."""
    waits = delays(first_delay, max_delay)
    while True:
        try:
            return await call()
        except Exception as exc:
            now = time.monotonic()
            if not is_transient(exc) or now >= give_up_at:
                raise
            delay = min(next(waits), max(give_up_at - now, 0.0))
            log.warning(f"{what} failed, trying again", error=str(exc), retry_in=round(delay, 2))
            await asyncio.sleep(delay)
