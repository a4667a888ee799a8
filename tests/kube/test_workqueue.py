"""The work queue: one worker per key, a key changed while handled runs again, requeues."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable

from reconciler.kube.workqueue import WorkQueue
from reconciler.util.polling import poll_until


async def test_a_key_added_while_it_is_handled_runs_once_more_and_never_concurrently() -> None:
    running: set[Hashable] = set()
    calls: list[Hashable] = []
    overlap: list[Hashable] = []
    release = asyncio.Event()

    async def handler(key: Hashable) -> float | None:
        if key in running:
            overlap.append(key)
        running.add(key)
        calls.append(key)
        if len(calls) == 1:
            await release.wait()
        running.discard(key)
        return None

    queue = WorkQueue(handler, workers=4)
    worker = asyncio.create_task(queue.run())
    queue.add("a")
    await poll_until(lambda: asyncio.sleep(0, calls == ["a"]), timeout=5, what="first call")
    queue.add("a")
    queue.add("a")
    release.set()
    await poll_until(lambda: asyncio.sleep(0, len(calls) == 2), timeout=5, what="second call")
    worker.cancel()
    await asyncio.gather(worker, return_exceptions=True)
    assert calls == ["a", "a"]
    assert overlap == []


async def test_the_returned_delay_requeues_and_a_failure_retries() -> None:
    calls: list[Hashable] = []

    async def handler(key: Hashable) -> float | None:
        calls.append(key)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return 0.01 if len(calls) < 4 else None

    queue = WorkQueue(handler, workers=1, error_delay=0.01)
    worker = asyncio.create_task(queue.run())
    queue.add("k")
    await poll_until(lambda: asyncio.sleep(0, len(calls) == 4), timeout=5, what="four calls")
    worker.cancel()
    await asyncio.gather(worker, return_exceptions=True)
    assert len(queue) == 0


async def test_a_stop_that_coincides_with_a_new_key_still_stops_every_worker() -> None:
    """A worker waiting for a later key is woken by a new one in the same loop iteration as the
    stop: the cancellation must not be lost (it was with `asyncio.wait_for` on Python 3.11, and
    the operator never stopped)."""

    async def handler(key: Hashable) -> float | None:
        return None

    queue = WorkQueue(handler, workers=2)
    queue.add("later", 100)
    worker = asyncio.create_task(queue.run())
    await poll_until(lambda: asyncio.sleep(0, not queue._wake.is_set()), timeout=5, what="idle")
    queue.add("now")
    worker.cancel()
    done, _ = await asyncio.wait([worker], timeout=5)  # not wait_for: it would wait forever
    assert done == {worker}, "the queue ignored its cancellation"


async def test_a_handler_knows_whether_only_its_own_timer_started_it() -> None:
    """A run due to the handler's returned delay is `by_timer`; a run with anything added from
    outside since the last one (before or while it ran) is not."""
    seen: list[bool] = []
    queue: WorkQueue

    async def handler(key: Hashable) -> float | None:
        seen.append(queue.by_timer(key))
        if len(seen) == 2:
            queue.add(key, 0.01)  # reported from outside while running: the next run is not
        return 0.01 if len(seen) < 4 else None

    queue = WorkQueue(handler, workers=1)
    worker = asyncio.create_task(queue.run())
    queue.add("k")
    await poll_until(lambda: asyncio.sleep(0, len(seen) == 4), timeout=5, what="four runs")
    worker.cancel()
    await asyncio.gather(worker, return_exceptions=True)
    assert seen == [False, True, False, True]
    assert queue.by_timer("k") is False  # not running
