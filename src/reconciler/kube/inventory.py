"""The record of what a component applied, kept in the cluster next to the component.

A ConfigMap `reconciler-inventory-<component>` in the component's namespace lists every object
the last reconciliation applied (apiVersion, kind, namespace, name). Pruning deletes what the
previous record lists and the new render does not. The record is written *before* applying (old
plus new, state `applying`) whenever new objects appear, so a crash mid-apply never leaves
objects nobody knows about, and rewritten afterwards (state `applied`). An unchanged component
rewrites nothing: the record's content depends only on the set of objects and the version.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from reconciler.kube.cluster import Cluster
from reconciler.kube.transform import COMPONENT, MANAGED_BY, MANAGER
from reconciler.model.kube_object import KubeObject, ObjectKey

PREFIX = "reconciler-inventory-"


@dataclass(frozen=True)
class Entry:
    api_version: str
    kind: str
    namespace: str
    name: str

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
        return cls(live.api_version, live.kind, live.namespace, live.name)


@dataclass
class Inventory:
    component: str
    namespace: str
    version: str = ""
    state: str = "applied"
    entries: list[Entry] = field(default_factory=list)

    def by_key(self) -> dict[ObjectKey, Entry]:
        return {entry.key: entry for entry in self.entries}


def configmap_name(component: str) -> str:
    return (PREFIX + re.sub(r"[^a-z0-9-]", "-", component.lower()))[:63].rstrip("-")


def _configmap(inventory: Inventory) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": configmap_name(inventory.component),
            "namespace": inventory.namespace,
            "labels": {MANAGED_BY: MANAGER, COMPONENT: inventory.component},
        },
        "data": {
            "component": inventory.component,
            "version": inventory.version,
            "state": inventory.state,
            "objects": json.dumps(
                [asdict(e) for e in sorted(set(inventory.entries), key=lambda e: e.key)],
                separators=(",", ":"),
            ),
        },
    }


async def read(cluster: Cluster, component: str, namespace: str) -> Inventory | None:
    stub = _configmap(Inventory(component, namespace))
    live = await cluster.get(stub)
    if live is None:
        return None
    data = live.raw.get("data") or {}
    entries = [Entry(**e) for e in json.loads(data.get("objects", "[]"))]
    return Inventory(component, namespace, data.get("version", ""), data.get("state", ""), entries)


async def write(cluster: Cluster, inventory: Inventory) -> None:
    await cluster.apply(_configmap(inventory))


async def remove(cluster: Cluster, component: str, namespace: str) -> None:
    await cluster.delete(_configmap(Inventory(component, namespace)))
