"""Wake-ups between the engine's loops: in-process events, plus LISTEN/NOTIFY on PostgreSQL.

Loops wait on a channel with a timeout (the safety-net interval) and are woken at once when
another part of this process, or (PostgreSQL) of another instance, notifies it. A wake-up carries
no data: the woken loop reads the database, so a lost notification costs latency, never work.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

CHANNELS = ("clusters", "operations", "finished")
PG_CHANNEL = "reconciler_events"
BATCH_SECONDS = 0.005

log = structlog.get_logger()


class Notifier:
    def __init__(self) -> None:
        self._events = {name: asyncio.Event() for name in CHANNELS}

    def _wake(self, channel: str) -> None:
        self._events[channel].set()

    async def notify(self, channel: str) -> None:
        self._wake(channel)

    async def wait(self, channel: str, timeout: float) -> None:
        event = self._events[channel]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout)
        event.clear()

    async def start(self) -> None:
        """Begin listening (no-op in process)."""

    async def stop(self) -> None:
        """Stop listening."""


class PostgresNotifier(Notifier):
    """Also delivers notifications of other instances through `LISTEN reconciler_events`."""

    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__()
        self._engine = engine
        self._listener: Any = None
        self._raw: Any = None
        self._pending: set[str] = set()
        self._flusher: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._listener = await self._engine.connect()
        raw = await self._listener.get_raw_connection()
        self._raw = raw.driver_connection
        await self._raw.add_listener(PG_CHANNEL, self._on_notify)

    def _on_notify(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        if payload in self._events:
            self._wake(payload)

    async def notify(self, channel: str) -> None:
        """Wake local waiters now; tell other instances in one NOTIFY batch shortly after
        (hundreds of operations finishing per second must not cost a round trip each)."""
        self._wake(channel)
        self._pending.add(channel)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())

    async def _flush(self) -> None:
        await asyncio.sleep(BATCH_SECONDS)
        channels, self._pending = self._pending, set()
        try:
            async with self._engine.connect() as conn:
                raw = await conn.get_raw_connection()
                driver = raw.driver_connection
                assert driver is not None
                for channel in sorted(channels):
                    await driver.execute(f"NOTIFY {PG_CHANNEL}, '{channel}'")
        except Exception as exc:  # a lost wake-up only costs latency (the sweep catches up)
            log.warning("notify failed", channels=sorted(channels), error=str(exc))

    async def stop(self) -> None:
        if self._flusher is not None:
            with contextlib.suppress(Exception):
                await self._flusher
        if self._raw is not None:
            with contextlib.suppress(Exception):
                await self._raw.remove_listener(PG_CHANNEL, self._on_notify)
        if self._listener is not None:
            await self._listener.close()
