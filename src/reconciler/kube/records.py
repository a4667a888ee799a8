"""The record of what a component applied, kept in the cluster next to the component.

A ConfigMap `reconciler-inventory-<component>` in the component's namespace lists every object
the last reconciliation applied (apiVersion, kind, namespace, name). Pruning deletes what the
previous record lists and the new render does not. The record is written *before* applying (old
plus new, state `applying`) whenever new objects appear, so a crash mid-apply never leaves
objects nobody knows about, and rewritten afterwards (state `applied`). An unchanged component
rewrites nothing: the record's content depends only on the set of objects, their observed state
and the version.

For the no-op fast path the record also holds the digest of the inputs the objects were rendered
from, when the last full apply happened, and per object the resourceVersion and signature (see
`live.signature`) last observed, after readiness, so the controllers' status writes are included.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from reconciler.kube.cluster import Cluster
from reconciler.kube.live import INVENTORY, LiveIndex, Observed, observe
from reconciler.kube.transform import COMPONENT, MANAGED_BY, MANAGER
from reconciler.model.kube_object import KubeObject, ObjectKey

PREFIX = "reconciler-inventory-"


@dataclass(frozen=True)
class Entry:
    api_version: str
    kind: str
    namespace: str
    name: str
    rv: str = ""
    """resourceVersion last observed ("" when unknown)."""
    sig: str = ""
    """Signature last observed (see `live.signature`)."""

    @property
    def observed(self) -> Observed | None:
        return Observed(self.rv, self.sig) if self.rv else None

    def seen(self, state: Observed | None) -> Entry:
        return replace(self, rv=state.resource_version, sig=state.signature) if state else self

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(self.api_version.rpartition("/")[0], self.kind, self.namespace, self.name)

    def as_object(self) -> KubeObject:
        meta: dict[str, Any] = {"name": self.name}
        if self.namespace:
            meta["namespace"] = self.namespace
        return KubeObject({"apiVersion": self.api_version, "kind": self.kind, "metadata": meta})

    @classmethod
    def of(cls, live: KubeObject) -> Entry:
        state = observe(live)
        return cls(
            live.api_version,
            live.kind,
            live.namespace,
            live.name,
            state.resource_version,
            state.signature,
        )


@dataclass
class Record:
    component: str
    namespace: str
    version: str = ""
    state: str = "applied"
    entries: list[Entry] = field(default_factory=list)
    digest: str = ""
    """Digest of the inputs the entries were rendered from (see `ChartProvider.digest`)."""
    full_at: float = 0.0
    """Unix time of the last full apply (every object applied)."""
    ready: bool = False
    """The entries' state was observed after every object was ready."""
    generated: str = ""
    """The paths of generated values per object, as `core.generated.Generated` dumps them."""
    regenerated: str = ""
    """The regenerate token of the last run that applied generated values as rendered."""

    def by_key(self) -> dict[ObjectKey, Entry]:
        return {entry.key: entry for entry in self.entries}


def configmap_name(component: str) -> str:
    return (PREFIX + re.sub(r"[^a-z0-9-]", "-", component.lower()))[:63].rstrip("-")


def _configmap(record: Record) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": configmap_name(record.component),
            "namespace": record.namespace,
            "labels": {MANAGED_BY: MANAGER, COMPONENT: record.component, INVENTORY: "true"},
        },
        "data": {
            "component": record.component,
            "version": record.version,
            "state": record.state,
            "digest": record.digest,
            "fullAt": f"{record.full_at:.3f}",
            "ready": "true" if record.ready else "false",
            "generated": record.generated,
            "regenerated": record.regenerated,
            "objects": json.dumps(
                [asdict(e) for _, e in sorted({e.key: e for e in record.entries}.items())],
                separators=(",", ":"),
            ),
        },
    }


async def read(
    cluster: Cluster, component: str, namespace: str, live: LiveIndex | None = None
) -> Record | None:
    """The component's record; through `live` (one LIST for all records of a run) if given."""
    stub = KubeObject(_configmap(Record(component, namespace)))
    found = await live.record(cluster, stub) if live is not None else await cluster.get(stub)
    if found is None:
        return None
    data = found.raw.get("data") or {}
    entries = [Entry(**e) for e in json.loads(data.get("objects", "[]"))]
    return Record(
        component,
        namespace,
        data.get("version", ""),
        data.get("state", ""),
        entries,
        data.get("digest", ""),
        float(data.get("fullAt") or 0),
        data.get("ready") == "true",
        data.get("generated", ""),
        data.get("regenerated", ""),
    )


async def write(cluster: Cluster, record: Record) -> None:
    await cluster.apply(_configmap(record))


async def remove(cluster: Cluster, component: str, namespace: str) -> None:
    await cluster.delete(_configmap(Record(component, namespace)))
