"""Sharding and high availability: several operator processes split the Kymas, each Kyma is
reconciled by the one process that holds its shard, and a standby takes a shard over when its
holder dies.

A Kyma's shard is a stable hash of its name modulo `count` (or, with `label` set, the Kyma's
value of that label when it is a shard number), so every process computes the same answer
without talking to the others; a Manifest belongs to its Kyma's shard. Shards, not Kymas, move
between processes: a process that comes or goes moves whole shards, never reshuffles names.

Ownership is a `coordination.k8s.io/v1` Lease per shard (`<prefix>-shard-<n>`); each process
also keeps a member Lease (`<prefix>-member-<identity>`), so all know how many are alive and
hold at most their fair share (ceil(count / members)), handing extras back: two processes, two
shards end with one each. A Lease counts as expired when its resourceVersion has not changed for
`lease_duration` by the observer's own clock (as client-go's leader election: no clock is
compared across machines). A holder stops working on a shard a second before its last renewal
could have lapsed, so a taker never overlaps a holder that lost its connection; keys that came
while a renewal was late are taken up again when it succeeds.
A graceful stop hands the shards back at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from reconciler.errors import KubeApiError, ReconcilerError, WaitTimeout
from reconciler.kube.cluster import Cluster
from reconciler.model.kube_object import Body
from reconciler.model.lifecycle import GROUP, kyma_of
from reconciler.observability.logging import get_logger
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.settings import ShardSettings
from reconciler.util.clock import utcnow
from reconciler.util.polling import poll_until

GROUP_LABEL = f"{GROUP}/shard-group"
ROLE_LABEL = f"{GROUP}/shard-role"


def shard_of(name: str, labels: dict[str, str] | None, settings: ShardSettings) -> int:
    """The shard of a Kyma: its label's shard number, else a stable hash of its name."""
    if settings.label:
        value = (labels or {}).get(settings.label, "")
        if value.isdigit() and int(value) < settings.count:
            return int(value)
    digest = hashlib.sha256(name.encode()).digest()
    return int.from_bytes(digest[:8], "big") % settings.count


def _now() -> str:
    return utcnow().strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Shards:
    def __init__(
        self,
        settings: ShardSettings,
        cluster: Cluster,
        on_acquired: Callable[[int], Awaitable[None]],
        drain: Callable[[int], Awaitable[None]],
        on_resumed: Callable[[int], Awaitable[None]] | None = None,
    ) -> None:
        if settings.renew_interval * 2 > settings.lease_duration:
            raise ReconcilerError("shard renew_interval must be at most half the lease_duration")
        self.settings = settings
        self.cluster = cluster
        self.on_acquired = on_acquired
        self.drain = drain
        self.on_resumed = on_resumed or on_acquired
        self.identity = settings.identity
        self._valid_until: dict[int, float] = {}
        self._seen: dict[str, tuple[str, float]] = {}
        self._base = f"/apis/coordination.k8s.io/v1/namespaces/{settings.lease_namespace}/leases"
        self._member = f"{settings.lease_prefix}-member-" + re.sub(
            r"[^a-z0-9-]", "-", self.identity.lower()
        )[:180].strip("-")
        self._log = get_logger(part="operator-shards", identity=self.identity)

    def owned(self, shard: int) -> bool:
        return self._valid_until.get(shard, 0.0) > time.monotonic()

    def owns(self, name: str, labels: dict[str, str] | None = None) -> bool:
        return self.owned(shard_of(name, labels, self.settings))

    @property
    def held(self) -> list[int]:
        return sorted(s for s in self._valid_until if self.owned(s))

    def _name(self, shard: int) -> str:
        return f"{self.settings.lease_prefix}-shard-{shard}"

    def _expired(self, lease: Body) -> bool:
        spec = lease.get("spec") or {}
        if not spec.get("holderIdentity"):
            return True
        _, since = self._seen[lease["metadata"]["name"]]
        duration = float(spec.get("leaseDurationSeconds") or self.settings.lease_duration)
        return time.monotonic() - since > duration

    async def _list(self) -> dict[str, Body]:
        listing = await self.cluster.client.request(
            "GET",
            self._base,
            params={"labelSelector": f"{GROUP_LABEL}={self.settings.lease_prefix}"},
        )
        leases = {str(item["metadata"]["name"]): dict(item) for item in listing.get("items", [])}
        now = time.monotonic()
        for name, lease in leases.items():
            version = str(lease["metadata"]["resourceVersion"])
            if self._seen.get(name, ("", 0.0))[0] != version:
                self._seen[name] = (version, now)
        return leases

    def _body(self, name: str, role: str, holder: str, previous: Body | None) -> Body:
        spec = dict((previous or {}).get("spec") or {})
        now = _now()
        if spec.get("holderIdentity") != holder:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (
                1 if previous else 0
            )
        spec.update(
            holderIdentity=holder,
            leaseDurationSeconds=math.ceil(self.settings.lease_duration),
            renewTime=now,
        )
        metadata: Body = {
            "name": name,
            "namespace": self.settings.lease_namespace,
            "labels": {GROUP_LABEL: self.settings.lease_prefix, ROLE_LABEL: role},
        }
        if previous is not None:
            metadata["resourceVersion"] = previous["metadata"]["resourceVersion"]
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": spec,
        }

    async def _write(self, name: str, role: str, holder: str, previous: Body | None) -> bool:
        """Create or update (guarded by the resourceVersion) one Lease; False if someone else
        wrote it first."""
        body = self._body(name, role, holder, previous)
        try:
            if previous is None:
                await self.cluster.client.request("POST", self._base, body=body)
            else:
                await self.cluster.client.request("PUT", f"{self._base}/{name}", body=body)
        except KubeApiError as exc:
            if exc.status in (404, 409):
                return False
            raise
        return True

    async def tick(self) -> None:
        """One round: renew what is held, hand back more than the fair share, take free shards."""
        started = time.monotonic()
        leases = await self._list()
        await self._write(self._member, "member", self.identity, leases.get(self._member))
        members = {
            str(lease["spec"]["holderIdentity"])
            for name, lease in leases.items()
            if (lease["metadata"].get("labels") or {}).get(ROLE_LABEL) == "member"
            and not self._expired(lease)
        } | {self.identity}
        target = math.ceil(self.settings.count / len(members))
        # a taker waits lease_duration from its first sight of our last write, which was
        # sent after `started`: stop a little earlier than that
        valid = started + self.settings.lease_duration - min(1.0, self.settings.renew_interval)
        for shard in list(self._valid_until):
            lease = leases.get(self._name(shard))
            mine = lease is not None and lease["spec"].get("holderIdentity") == self.identity
            lapsed = not self.owned(shard)
            if mine and await self._write(self._name(shard), "shard", self.identity, lease):
                self._valid_until[shard] = valid
                if lapsed:  # keys were turned away meanwhile: take them up again
                    self._log.warning("shard renewed late", shard=shard)
                    await self.on_resumed(shard)
            else:
                self._valid_until.pop(shard, None)
                self._log.warning("shard lost", shard=shard)
        for shard in reversed(self.held[target:]):  # more than the fair share: hand back
            await self._release(shard, leases)
        order = sorted(
            range(self.settings.count),
            key=lambda s: (s - _offset(self.identity, self.settings.count)) % self.settings.count,
        )
        for shard in order:
            if len(self.held) >= target:
                break
            if shard in self._valid_until:
                continue
            name = self._name(shard)
            lease = leases.get(name)
            holder = ((lease or {}).get("spec") or {}).get("holderIdentity")
            if lease is not None and holder != self.identity and not self._expired(lease):
                continue
            if await self._write(name, "shard", self.identity, lease):
                self._valid_until[shard] = valid
                self._log.info("shard acquired", shard=shard)
                await self.on_acquired(shard)

    async def _release(self, shard: int, leases: dict[str, Body]) -> None:
        self._valid_until.pop(shard, None)  # no new work on it from now on
        await self.drain(shard)
        name = self._name(shard)
        lease = leases.get(name)
        if lease is not None:
            current = await self.cluster.client.request("GET", f"{self._base}/{name}")
            if (current.get("spec") or {}).get("holderIdentity") == self.identity:
                await self._write(name, "shard", "", dict(current))
        self._log.info("shard released", shard=shard)

    async def run(self) -> None:
        """Hold shards until cancelled; then hand them back (a standby need not wait)."""
        try:
            while True:
                try:
                    await self.tick()
                except ReconcilerError as exc:
                    self._log.warning("shard round failed", error=str(exc))
                await asyncio.sleep(self.settings.renew_interval)
        finally:
            await asyncio.shield(self._hand_back())

    async def _hand_back(self) -> None:
        try:
            leases = await self._list()
            for shard in self.held:
                await self._release(shard, leases)
            member = leases.get(self._member)
            if member is not None:
                await self.cluster.client.request("DELETE", f"{self._base}/{self._member}")
        except ReconcilerError as exc:
            self._log.warning("cannot hand the shards back", error=str(exc))


def _offset(identity: str, count: int) -> int:
    """Where a process starts looking for free shards: spread, so two do not race for one."""
    return int.from_bytes(hashlib.sha256(identity.encode()).digest()[:4], "big") % count


class ShardGate:
    """The runtime's side of sharding: which keys this process may handle, the Kymas,
    Manifests and SyncResources of a shard it takes over, and waiting out its work on a shard it
    hands back."""

    def __init__(
        self,
        settings: ShardSettings,
        control: ControlPlane,
        enqueue: Callable[[tuple[str, str, str]], None],
        drain_timeout: float,
    ) -> None:
        self.settings = settings
        self.control = control
        self.enqueue = enqueue
        self.drain_timeout = drain_timeout
        self.namespace = ""
        """The namespace the operator watches ("" for all)."""
        self.shards = Shards(settings, control.cluster, self._acquired, self._drain, self._resumed)
        self._kyma_labels: dict[tuple[str, str], dict[str, str]] = {}
        self._manifest_kyma: dict[tuple[str, str], str] = {}
        self._busy: dict[int, int] = {}
        self._turned_away: dict[int, set[tuple[str, str, str]]] = {}
        """Keys of each shard this process did not handle since it last held the shard."""

    def note_kyma(self, namespace: str, name: str, labels: dict[str, str]) -> None:
        self._kyma_labels[(namespace, name)] = dict(labels)

    def note_manifest(self, namespace: str, name: str, kyma: str) -> None:
        self._manifest_kyma[(namespace, name)] = kyma

    async def shard(self, kind: str, namespace: str, name: str) -> int | None:
        """The shard of a key (None: the object is gone, nobody's)."""
        if kind != "Kyma":
            kyma = self._manifest_kyma.get((namespace, name))
            if kyma is None:
                manifest = await self.control.get(kind, namespace, name)
                if manifest is None:
                    return None
                kyma = kyma_of(manifest)
                self._manifest_kyma[(namespace, name)] = kyma
            name = kyma
        labels = self._kyma_labels.get((namespace, name))
        if labels is None and self.settings.label:
            body = await self.control.get("Kyma", namespace, name)
            labels = dict((body or {}).get("metadata", {}).get("labels") or {})
        return shard_of(name, labels, self.settings)

    @contextlib.asynccontextmanager
    async def claim(self, kind: str, namespace: str, name: str) -> AsyncIterator[bool]:
        """Whether this process handles the key now; its shard counts as busy meanwhile."""
        shard = await self.shard(kind, namespace, name)
        if shard is None or not self.shards.owned(shard):
            if shard is not None:
                self._turned_away.setdefault(shard, set()).add((kind, namespace, name))
            yield False
            return
        self._busy[shard] = self._busy.get(shard, 0) + 1
        try:
            yield True
        finally:
            self._busy[shard] -= 1

    async def _resumed(self, shard: int) -> None:
        for key in self._turned_away.pop(shard, set()):
            self.enqueue(key)

    async def _acquired(self, shard: int) -> None:
        self._turned_away.pop(shard, None)  # everything of the shard is enqueued below
        for kind in ("Kyma", "Manifest"):
            for item in await self.control.list(kind, self.namespace):
                meta = item["metadata"]
                key = (kind, str(meta["namespace"]), str(meta["name"]))
                labels = dict(meta.get("labels") or {})
                if kind == "Kyma":
                    self.note_kyma(key[1], key[2], labels)
                else:
                    self.note_manifest(key[1], key[2], kyma_of(item))
                if await self.shard(*key) == shard:
                    self.enqueue(key)
        for key in await self._sync_resources_of(shard):
            self.enqueue(key)

    async def _sync_resources_of(self, shard: int) -> list[tuple[str, str, str]]:
        """The SyncResources that go with the shard's Kymas (`spec.kyma`): without this a
        takeover would leave their remote objects alone until each one's next event."""
        try:
            items = await self.control.list("SyncResource", self.namespace)
        except ReconcilerError as exc:  # the kind may not be installed
            get_logger(part="operator-shards").warning(
                "cannot list SyncResources on takeover", shard=shard, error=str(exc)
            )
            return []
        keys = []
        for item in items:
            meta, kyma = item["metadata"], str((item.get("spec") or {}).get("kyma") or "")
            if kyma and await self.shard("Kyma", str(meta["namespace"]), kyma) == shard:
                keys.append(("SyncResource", str(meta["namespace"]), str(meta["name"])))
        return keys

    async def _drain(self, shard: int) -> None:
        async def idle() -> bool:
            return self._busy.get(shard, 0) == 0

        with contextlib.suppress(WaitTimeout):
            await poll_until(idle, timeout=self.drain_timeout, what=f"shard {shard} idle")
