"""Reusing connections to a cluster across the tasks of one process.

A control plane runs every component of a cluster within seconds (the component reconciler
service gets them from the mothership; the mothership's in-process workers claim them), and most
of a trivial task's cost was opening a client: TLS handshakes for dozens of discovery requests. So
clients (connection pools) are kept per kubeconfig digest for a short idle time, while every
attempt still gets a fresh `Cluster` with its own discovery: capabilities never come from before
a CRD another component just applied. Only a digest of the kubeconfig is kept as key; the text
lives inside the client as before. A bounded number of idle clients, all closed on shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from reconciler.kube.client import KubeClient
from reconciler.kube.cluster import Cluster


@dataclass
class _Entry:
    client: KubeClient
    users: int = 0
    last_used: float = field(default_factory=time.monotonic)


class ClientCache:
    def __init__(
        self, *, max_idle: int = 32, idle_seconds: float = 60.0, allow_host_access: bool = False
    ) -> None:
        """`allow_host_access`: kubeconfigs may run commands or read files here (only for ones
        a policy already accepted, such as those the mothership stored)."""
        self.max_idle = max_idle
        self.idle_seconds = idle_seconds
        self.allow_host_access = allow_host_access
        self._entries: dict[str, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    @contextlib.asynccontextmanager
    async def cluster(self, kubeconfig: str) -> AsyncIterator[Cluster]:
        """A `Cluster` (fresh discovery) over a shared client; proves the apiserver answers.

        Raises KubeconfigError / ClusterUnreachable as `Cluster.connect` does.
        """
        key = hashlib.sha256(kubeconfig.encode()).hexdigest()
        entry = self._entries.get(key)
        if entry is None:
            client = KubeClient.from_kubeconfig(
                kubeconfig, text=True, allow_host_access=self.allow_host_access
            )
            entry = _Entry(client)
            self._entries[key] = entry
        entry.users += 1
        try:
            cluster = Cluster(entry.client)
            await cluster.version()
            yield cluster
        finally:
            entry.users -= 1
            entry.last_used = time.monotonic()
            await self._evict()

    async def _evict(self) -> None:
        now = time.monotonic()
        idle = sorted(
            ((k, e) for k, e in self._entries.items() if e.users == 0),
            key=lambda item: item[1].last_used,
        )
        stale = [k for k, e in idle if now - e.last_used > self.idle_seconds]
        surplus = [k for k, _ in idle if k not in stale][
            : max(0, len(idle) - len(stale) - self.max_idle)
        ]
        closing = [self._entries.pop(k).client for k in [*stale, *surplus]]
        if closing:
            await asyncio.gather(*(c.aclose() for c in closing), return_exceptions=True)

    async def aclose(self) -> None:
        entries, self._entries = list(self._entries.values()), {}
        await asyncio.gather(*(e.client.aclose() for e in entries), return_exceptions=True)
