"""List and watch, the controllers' one way to follow what changes in a cluster.

`watch_from` is the watch loop itself: the events after a resourceVersion, bookmarks only moving
that starting point, a watch the apiserver ends (`timeoutSeconds`) opened again from the last
version seen, and an end on an ERROR event (the version expired: the caller lists again).

`list_and_watch` builds client-go's informer without a cache on it: list, then watch from the
list's resourceVersion, forever; every object is handed to `on_event` as it is now
(ADDED/MODIFIED/DELETED), and after a broken, ended or expired watch the list is read again (a
level-triggered consumer loses nothing). The operator's drift watches (`operator/clusters/
drift.py`) follow metadata only, from a one-item list, with the same `watch_from`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from reconciler.errors import ReconcilerError
from reconciler.kube.client import KubeClient
from reconciler.observability.logging import get_logger

OnEvent = Callable[[str, dict[str, Any]], None]
WATCH_SECONDS = "300"


async def watch_from(
    client: KubeClient,
    path: str,
    version: str,
    params: dict[str, str] | None = None,
    *,
    accept: str | None = None,
    renew: bool = True,
) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """(event type, object) of every change at `path` after `version`, BOOKMARKs left out;
    ends on an ERROR event, or when the apiserver ends the watch unless `renew` (then the
    watch is opened again from the newest version seen). Errors are raised."""
    while True:
        query = {**(params or {}), "resourceVersion": version, "timeoutSeconds": WATCH_SECONDS}
        async for event in client.watch(path, query, accept=accept):
            kind = str(event.get("type"))
            if kind == "ERROR":
                return  # e.g. 410 Gone: the caller lists again
            obj = event.get("object") or {}
            version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
            if kind != "BOOKMARK":
                yield kind, obj
        if not renew:
            return


async def list_and_watch(
    client: KubeClient,
    path: str,
    on_event: OnEvent,
    *,
    synced: asyncio.Event | None = None,
    retry_delay: float = 1.0,
) -> None:
    """Run until cancelled; `synced` is set once the first list has been handed over."""
    log = get_logger(part="informer", path=path)
    while True:
        try:
            listing = await client.request("GET", path)
            for item in listing.get("items", []):
                on_event("ADDED", item)
            if synced is not None:
                synced.set()
            version = str(listing["metadata"].get("resourceVersion", ""))
            bookmarks = {"allowWatchBookmarks": "true"}
            async for kind, obj in watch_from(client, path, version, bookmarks, renew=False):
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    on_event(kind, obj)
        except ReconcilerError as exc:
            log.warning("list/watch failed; retrying", error=str(exc))
            await asyncio.sleep(retry_delay)
