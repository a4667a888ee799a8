"""List, then watch from the list's resourceVersion, forever: every object is handed to
`on_event` as it is now (ADDED/MODIFIED/DELETED), and after a broken or expired watch the list
is read again (a level-triggered consumer loses nothing). client-go's informer without a cache.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from reconciler.errors import ReconcilerError
from reconciler.kube.client import KubeClient
from reconciler.observability.logging import get_logger

OnEvent = Callable[[str, dict[str, Any]], None]


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
            params = {
                "resourceVersion": str(listing["metadata"].get("resourceVersion", "")),
                "timeoutSeconds": "300",
                "allowWatchBookmarks": "true",
            }
            async for event in client.watch(path, params):
                kind = str(event.get("type"))
                if kind == "ERROR":
                    break  # expired resourceVersion: list again
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    on_event(kind, event["object"])
        except ReconcilerError as exc:
            log.warning("list/watch failed; retrying", error=str(exc))
            await asyncio.sleep(retry_delay)
