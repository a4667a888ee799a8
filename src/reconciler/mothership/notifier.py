"""Wake-ups between the engine's loops: in-process events, plus LISTEN/NOTIFY on PostgreSQL.

Loops wait on a channel with a timeout (the safety-net interval) and are woken at once when
another part of this process, or (PostgreSQL) of another instance, notifies it. A wake-up carries
no data: the woken loop reads the database, so a lost notification costs latency, never work.
That is also why a dropped LISTEN connection is simply opened again on the next notification.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from typing import Any

import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from reconciler.util.polling import wait_event

PG_CHANNEL = "reconciler_events"
BATCH_SECONDS = 0.005

log = structlog.get_logger()


class Channel(enum.StrEnum):
    """What changed, so only the loop that acts on it wakes up."""

    CLUSTERS = "clusters"
    """A cluster needs scheduling (upsert, status change, finished reconciliation)."""
    OPERATIONS = "operations"
    """Operations became claimable, or a worker slot is free."""
    FINISHED = "finished"
    """An operation reached a result: the bookkeeper may finish its reconciliation."""


class Notifier:
    def __init__(self) -> None:
        self._events = {channel: asyncio.Event() for channel in Channel}

    def wake(self, channel: Channel) -> None:
        """Wake this process's waiters on `channel` (synchronous: safe in done-callbacks)."""
        self._events[channel].set()

    def wake_all(self) -> None:
        for channel in Channel:
            self.wake(channel)

    async def notify(self, channel: Channel) -> None:
        """Wake waiters on `channel` here and (PostgreSQL) in every other instance."""
        self.wake(channel)

    async def wait(self, channel: Channel, timeout: float) -> None:
        event = self._events[channel]
        await wait_event(event, timeout)
        event.clear()

    async def start(self) -> None:
        """Begin listening (no-op in process)."""

    async def stop(self) -> None:
        """Stop listening."""


class PostgresNotifier(Notifier):
    """Also delivers notifications of other instances through `LISTEN reconciler_events`.

    When the listening connection drops (a database restart), the next flush notices and
    listens again on a fresh connection, and every loop is woken once to catch up on
    notifications that may have been missed in between."""

    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__()
        self._engine = engine
        self._listener: Any = None
        self._raw: Any = None
        self._pending: set[Channel] = set()
        self._flusher: asyncio.Task[None] | None = None
        self._relisten = asyncio.Lock()
        self.listens = 0
        """How many times LISTEN was (re-)established: observable by tests and logs."""

    async def start(self) -> None:
        await self._listen()

    async def _listen(self) -> None:
        for attempt in (1, 2):
            listener = await self._engine.connect()
            try:
                # a pooled connection from before a database restart fails here, through
                # SQLAlchemy, which then recycles the whole pool: the second one is fresh
                await listener.exec_driver_sql("SELECT 1")
                await listener.commit()
                break
            except sa.exc.DBAPIError:
                await listener.close()
                if attempt == 2:
                    raise
        self._listener = listener
        raw = await self._listener.get_raw_connection()
        self._raw = raw.driver_connection
        await self._raw.add_listener(PG_CHANNEL, self._on_notify)
        self._raw.add_termination_listener(self._on_lost)
        self.listens += 1

    def _on_lost(self, _connection: Any) -> None:
        log.warning("LISTEN connection lost; listening again on the next notification")
        self._raw = None

    async def ensure_listening(self) -> bool:
        """Listen again when the connection was lost; True when it had to (and did)."""
        async with self._relisten:
            if self._raw is not None and not self._raw.is_closed():
                return False
            await self._drop_listener()
            await self._listen()
        log.info("LISTEN re-established", listens=self.listens)
        self.wake_all()  # whatever was notified while deaf: catch up now
        return True

    async def wait(self, channel: Channel, timeout: float) -> None:
        """As `Notifier.wait`; first listens again if the connection was lost, so an instance
        that only receives (never notifies) recovers too."""
        try:
            await self.ensure_listening()
        except Exception as exc:  # database still down: the timeout keeps the loop going
            log.debug("cannot listen yet", error=str(exc))
        await super().wait(channel, timeout)

    def _on_notify(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        if payload in Channel.__members__.values():
            self.wake(Channel(payload))

    async def notify(self, channel: Channel) -> None:
        """Wake local waiters now; tell other instances in one NOTIFY batch shortly after
        (hundreds of operations finishing per second must not cost a round trip each)."""
        self.wake(channel)
        self._pending.add(channel)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())

    async def _flush(self) -> None:
        await asyncio.sleep(BATCH_SECONDS)
        channels, self._pending = self._pending, set()
        for attempt in (1, 2):
            # a pooled connection from before a database restart fails once; SQLAlchemy sees
            # the disconnect and recycles the pool, so the second attempt gets a fresh one (API
            # requests, on their own pool, no longer do that for this one)
            try:
                await self.ensure_listening()
                async with self._engine.connect() as conn:  # sent when it commits
                    for channel in sorted(channels):
                        await conn.exec_driver_sql(f"NOTIFY {PG_CHANNEL}, '{channel.value}'")
                    await conn.commit()
                return
            except Exception as exc:  # a lost wake-up only costs latency (the sweep catches up)
                if attempt == 2:
                    log.warning("notify failed", channels=sorted(channels), error=str(exc))

    async def _drop_listener(self) -> None:
        if self._raw is not None:
            self._raw.remove_termination_listener(self._on_lost)
            with contextlib.suppress(Exception):
                await self._raw.remove_listener(PG_CHANNEL, self._on_notify)
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.close()
        self._raw = self._listener = None

    async def stop(self) -> None:
        if self._flusher is not None:
            with contextlib.suppress(Exception):
                await self._flusher
        await self._drop_listener()
