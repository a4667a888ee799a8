"""Reusing connections to a cluster across the tasks of one process.

A control plane runs every component of a cluster within seconds (the component reconciler
service gets them from the mothership; the mothership's in-process workers claim them), and most
of a trivial task's cost was opening a client: TLS handshakes for dozens of discovery requests. So
clients (connection pools) are kept per kubeconfig digest for a short idle time, and with them
one `Cluster` (discovery, learned unstored zero values) shared by the tasks of that cluster. Each
task still starts from the cluster as it is: `Cluster.refresh` asks the version again and keeps
the discovery only while the capabilities fingerprint (4 requests) stands still, so capabilities
never come from before a CRD another component just applied, while a first install no longer
reads the whole discovery (one request per group version) for its `.Capabilities`. Only a digest
of the kubeconfig is kept as key; the text lives inside the client as before. A bounded number of
idle clients, all closed on shutdown.

A client whose use fails with a connection error or an authentication/authorization refusal
(401) is dropped at once (and closed when its last user is done): the next use builds a
fresh one, so a restarted apiserver, rotated certificates or a re-issued token recover without
waiting for the idle time. `client` hands out the shared `KubeClient` itself for readers that
need no discovery (the admin console's Kyma view polls every few seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

from reconciler.errors import ClusterUnreachable, KubeApiError
from reconciler.kube.client import KubeClient
from reconciler.kube.cluster import Cluster

UNAUTHORIZED = 401
"""After it a client's credentials are suspect (a re-issued token or certificate must be read
anew from the kubeconfig, which only a new client does). Not 403: an RBAC refusal of one
request says nothing about the credentials, and would only churn clients."""


def _content(path: Path) -> bytes:
    try:
        return path.expanduser().read_bytes()
    except OSError:
        return b""  # the client factory names the problem; nothing is cached


@dataclass
class _Entry:
    client: KubeClient
    users: int = 0
    last_used: float = field(default_factory=time.monotonic)
    dropped: bool = False
    cluster: Cluster | None = None
    """The tasks' shared `Cluster` over `client`, made on first use by `ClientCache.cluster`."""

    async def aclose(self) -> None:
        """Close the client, and the shared cluster's background work (CRD warm-ups) with it."""
        await (self.cluster or self.client).aclose()


class ClientCache:
    def __init__(
        self,
        *,
        max_idle: int = 32,
        idle_seconds: float = 60.0,
        allow_host_access: bool = False,
        timeout: float = 30.0,
        pool: int = 64,
        client_type: type[KubeClient] = KubeClient,
    ) -> None:
        """`allow_host_access`: kubeconfigs may run commands or read files here (only for ones
        a policy already accepted, such as those the mothership stored). `timeout` and `pool`
        are each client's (a poller wants a short timeout and few connections). `client_type`:
        what connects (tests pass one that counts its requests)."""
        self.max_idle = max_idle
        self.idle_seconds = idle_seconds
        self.allow_host_access = allow_host_access
        self.timeout = timeout
        self.pool = pool
        self.client_type = client_type
        self._entries: dict[str, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    @contextlib.asynccontextmanager
    async def cluster(self, kubeconfig: str) -> AsyncIterator[Cluster]:
        """The shared `Cluster` of `kubeconfig`, refreshed for a task that starts now (see the
        module docstring); proves the apiserver answers.

        Raises KubeconfigError / ClusterUnreachable as `Cluster.connect` does.
        """
        key = hashlib.sha256(kubeconfig.encode()).hexdigest()
        async with self._lease(key, lambda: self._new(kubeconfig, text=True)) as entry:
            if entry.cluster is None:
                entry.cluster = Cluster(entry.client)
            await entry.cluster.refresh()
            yield entry.cluster

    @contextlib.asynccontextmanager
    async def client(self, kubeconfig: Path) -> AsyncIterator[KubeClient]:
        """The shared client of a kubeconfig file, without a probe or discovery.

        Keyed by the path and the file's content, so a rewritten kubeconfig (rotated
        credentials) gets a new client. Raises KubeconfigError as `load_kubeconfig` does.
        """
        content = await asyncio.to_thread(_content, kubeconfig)
        key = hashlib.sha256(str(kubeconfig).encode() + b"\0" + content).hexdigest()
        async with self._lease(key, lambda: self._new(kubeconfig)) as entry:
            yield entry.client

    def _new(self, kubeconfig: str | Path, *, text: bool = False) -> KubeClient:
        return self.client_type.from_kubeconfig(
            kubeconfig,
            text=text,
            allow_host_access=self.allow_host_access,
            timeout=self.timeout,
            pool=self.pool,
        )

    @contextlib.asynccontextmanager
    async def _lease(self, key: str, factory: Callable[[], KubeClient]) -> AsyncIterator[_Entry]:
        entry = self._entries.get(key)
        if entry is None:
            entry = _Entry(factory())
            self._entries[key] = entry
        entry.users += 1
        try:
            yield entry
        except ClusterUnreachable:
            self._drop(key, entry)
            raise
        except KubeApiError as exc:
            if exc.status == UNAUTHORIZED:
                self._drop(key, entry)
            raise
        finally:
            entry.users -= 1
            entry.last_used = time.monotonic()
            if entry.dropped and entry.users == 0:
                await entry.aclose()
            await self._evict()

    def _drop(self, key: str, entry: _Entry) -> None:
        """No new user gets this client; the last current one closes it."""
        entry.dropped = True
        if self._entries.get(key) is entry:
            del self._entries[key]

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
        closing = [self._entries.pop(k) for k in [*stale, *surplus]]
        if closing:
            await asyncio.gather(*(c.aclose() for c in closing), return_exceptions=True)

    async def aclose(self) -> None:
        entries, self._entries = list(self._entries.values()), {}
        await asyncio.gather(*(e.aclose() for e in entries), return_exceptions=True)
