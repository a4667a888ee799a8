"""Changes reported from remote clusters, handed to whoever in the operator cares.

The listener (`watcher/listener.py`) turns each verified `POST /v2/<manager>/event`
into one `RemoteEvent` and publishes it here; the Kyma controller subscribes (it enqueues the
Kyma at once), and so may any other part (the module resource sync copies the watched custom
resource). Publishing never waits for a handler: synchronous handlers run inline and must be
quick (a queue add), coroutine handlers run as tasks of the operator's loop, so a slow handler
neither delays the listener's answer nor the other handlers. A failing handler is logged.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from reconciler.observability.logging import get_logger


@dataclass(frozen=True)
class RemoteEvent:
    """One change in a remote cluster, already checked against the sender's certificate."""

    kyma_namespace: str
    """Namespace of the control-plane Kyma the remote cluster belongs to."""
    kyma_name: str
    """Name of that Kyma."""
    runtime_id: str
    """The runtime (remote cluster) that sent it: the CN of its client certificate."""
    group: str
    """API group of the watched object ("" for the core group)."""
    version: str
    kind: str
    namespace: str
    """Namespace of the watched object in the remote cluster ("" when cluster-scoped)."""
    name: str
    """Name of the watched object in the remote cluster."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


Handler = Callable[[RemoteEvent], Awaitable[None] | None]


class RemoteEvents:
    """Subscribers of remote events; `publish` hands an event to each of them."""

    def __init__(self) -> None:
        self._handlers: list[Handler] = []
        self._tasks: set[asyncio.Future[None]] = set()
        self._log = get_logger(part="operator-events")

    def subscribe(self, handler: Handler) -> Callable[[], None]:
        """Call `handler` for every event from now on; the returned function unsubscribes."""
        self._handlers.append(handler)
        return lambda: self._handlers.remove(handler) if handler in self._handlers else None

    def publish(self, event: RemoteEvent) -> None:
        """Hand `event` to every handler (call from the operator's event loop)."""
        for handler in list(self._handlers):
            try:
                result = handler(event)
            except Exception:
                self._log.exception("remote event handler failed", kyma=event.kyma_name)
                continue
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                self._tasks.add(task)
                task.add_done_callback(self._done)

    def _done(self, task: asyncio.Future[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self._log.error("remote event handler failed", error=repr(task.exception()))

    async def aclose(self) -> None:
        """Wait out handlers still running (cancelled: the operator is stopping)."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
