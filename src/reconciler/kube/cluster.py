"""Objects on one cluster: server-side apply, get, list, delete of dict manifests of any kind.

`Cluster` is what the core and component actions talk to. It owns the client and the discovery
cache; create it with `Cluster.connect(kubeconfig)` and close it with `aclose`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any

from reconciler.errors import ApplyError, KubeApiError, ReconcilerError
from reconciler.kube.client import FIELD_MANAGER, KubeClient
from reconciler.kube.discovery import ResourceInfo, RestMapper
from reconciler.kube.kubeconfig import KubeconfigSource
from reconciler.kube.zeros import UnstoredZeros
from reconciler.model.kube_object import KubeObject
from reconciler.util.backoff import delays

APPLY_PATCH = "application/apply-patch+yaml"
# Statuses worth another attempt: conflicts, throttling, and admission webhooks or aggregated
# APIs that are not serving yet (a component's own webhook starting up).


def _as_object(obj: KubeObject | dict[str, Any]) -> KubeObject:
    return obj if isinstance(obj, KubeObject) else KubeObject(obj)


class Cluster:
    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.mapper = RestMapper(client)
        self.unstored_zeros = UnstoredZeros()
        self._version: str | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._refreshing: asyncio.Task[None] | None = None
        self._queued: asyncio.Task[None] | None = None

    async def version(self) -> str:
        """The cluster's Kubernetes version (asked once per connection, and on `refresh`)."""
        if self._version is None:
            self._version = await self.client.version()
        return self._version

    async def refresh(self) -> None:
        """Bring what this object caches up to the cluster as it is now, for an operation that
        starts now and shares the object with others (`kube.clients`): the version is asked
        again (which proves the apiserver answers) and discovery is kept only while the
        capabilities fingerprint stands still; a new version or new kinds also forget the
        learned unstored zero values. Callers arriving together share one refresh, but never
        one that started before they arrived: it might predate what they must see (a CRD the
        previous operation applied). Raises ClusterUnreachable as `version` does."""
        if self._queued is None:
            self._queued = asyncio.ensure_future(self._refresh_after(self._refreshing))
        await asyncio.shield(self._queued)

    async def _refresh_after(self, previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            await asyncio.wait({previous})
        # running from here on: whoever arrives now queues the next refresh
        self._refreshing, self._queued = self._queued, None
        version = await self.client.version()
        if self._version is not None and version != self._version:
            self.mapper.invalidate()  # an upgraded apiserver: nothing learned before holds
        kept = await self.mapper.revalidate()
        if not kept:
            self.unstored_zeros = UnstoredZeros()
        self._version = version

    @classmethod
    async def connect(
        cls, kubeconfig: KubeconfigSource, *, text: bool = False, **kwargs: Any
    ) -> Cluster:
        """Build a client and prove the apiserver answers (ClusterUnreachable otherwise).

        `text=True`: `kubeconfig` is the content itself, never a path (input from clients); it
        is refused when it would run a command or read a file here, unless `allow_host_access`
        is passed on."""
        cluster = cls(KubeClient.from_kubeconfig(kubeconfig, text=text, **kwargs))
        try:
            await cluster.version()
        except BaseException:
            await cluster.aclose()
            raise
        return cluster

    async def aclose(self) -> None:
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.client.aclose()

    def warm(self, crds: Iterable[KubeObject]) -> None:
        """Have the apiserver prepare to serve these just-established CRDs, in the background.

        Why: the apiserver builds a CRD's storage, validators and server-side-apply schema on the
        first request for its kind, one CRD at a time under one lock (a second or more for a set
        of big CRDs). Left to the first applies of custom resources, that cost lands on whichever
        components apply them first, all stalled behind the same lock; one `LIST ?limit=1` per
        CRD sent now pays it while the components in between run. Read-only, so failures only
        mean no head start (the apply that follows reports any real problem).
        """
        for crd in crds:
            spec = crd.raw.get("spec") or {}
            served = [v["name"] for v in spec.get("versions") or [] if v.get("served", True)]
            plural = (spec.get("names") or {}).get("plural")
            if not (served and plural and spec.get("group")):
                continue
            path = f"/apis/{spec['group']}/{served[0]}/{plural}"
            task = asyncio.create_task(self._warm_one(path))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _warm_one(self, path: str) -> None:
        # only a head start: the applies of this kind will say what is wrong
        with contextlib.suppress(ReconcilerError):
            await self.client.request("GET", path, params={"limit": "1"})

    async def __aenter__(self) -> Cluster:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def info(self, obj: KubeObject) -> ResourceInfo:
        return await self.mapper.resolve(obj.api_version, obj.kind)

    async def apply(
        self,
        obj: KubeObject | dict[str, Any],
        *,
        dry_run: bool = False,
        field_manager: str = FIELD_MANAGER,
        attempts: int = 5,
    ) -> KubeObject:
        """Server-side apply (forced), retrying transient failures with backoff."""
        target = _as_object(obj)
        if not dry_run:  # zero values the apiserver drops would rewrite the object every time
            target = await self.unstored_zeros.trim(
                target,
                lambda o: self.apply(o, dry_run=True, field_manager=field_manager, attempts=1),
            )
        info = await self.info(target)
        params = {"fieldManager": field_manager, "force": "true"}
        if dry_run:
            params["dryRun"] = "All"
        path = info.path(target.namespace or None, target.name)
        waits = delays(0.2, 3.0)
        for attempt in range(1, attempts + 1):
            try:
                live = await self.client.request(
                    "PATCH", path, params=params, body=target.raw, content_type=APPLY_PATCH
                )
                return KubeObject(live)
            except KubeApiError as exc:
                if not exc.retryable or attempt == attempts:
                    raise ApplyError(f"{target}: rejected by the apiserver: {exc}") from None
            await asyncio.sleep(next(waits))
        raise AssertionError("unreachable")

    async def create(
        self, obj: KubeObject | dict[str, Any], *, field_manager: str = FIELD_MANAGER
    ) -> KubeObject | None:
        """Create `obj` only if it does not exist yet; None when it does (whoever created it
        first keeps it: an apply would take it over). For claims such as "this component made
        the namespace", where concurrent appliers must not all win."""
        target = _as_object(obj)
        info = await self.info(target)
        try:
            live = await self.client.request(
                "POST",
                info.path(target.namespace or None),
                params={"fieldManager": field_manager},
                body=target.raw,
            )
        except KubeApiError as exc:
            if exc.status == 409 and exc.reason == "AlreadyExists":
                return None
            raise ApplyError(f"{target}: create rejected by the apiserver: {exc}") from None
        return KubeObject(live)

    async def get(self, obj: KubeObject | dict[str, Any]) -> KubeObject | None:
        target = _as_object(obj)
        info = await self.info(target)
        try:
            return KubeObject(
                await self.client.request("GET", info.path(target.namespace, target.name))
            )
        except KubeApiError as exc:
            if exc.status == 404:
                return None
            raise

    async def delete(
        self, obj: KubeObject | dict[str, Any], *, propagation: str = "Background"
    ) -> bool:
        """Delete; False when it was already gone (or its kind no longer exists)."""
        target = _as_object(obj)
        try:
            info = await self.info(target)
        except ApplyError:
            return False
        try:
            await self.client.request(
                "DELETE",
                info.path(target.namespace, target.name),
                body={
                    "kind": "DeleteOptions",
                    "apiVersion": "v1",
                    "propagationPolicy": propagation,
                },
            )
        except KubeApiError as exc:
            if exc.status == 404:
                return False
            raise ApplyError(f"{target}: delete rejected by the apiserver: {exc}") from None
        return True

    async def list(
        self,
        info: ResourceInfo,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        limit: int | None = None,
    ) -> list[KubeObject]:
        params: dict[str, str] = {}
        if label_selector:
            params["labelSelector"] = label_selector
        if limit:
            params["limit"] = str(limit)
        listing = await self.client.request("GET", info.path(namespace), params=params)
        api_version, kind = info.api_version, info.kind
        return [
            KubeObject({"apiVersion": api_version, "kind": kind, **item})
            for item in listing.get("items", [])
        ]
