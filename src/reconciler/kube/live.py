"""What the cluster holds now, read as cheaply as possible: metadata of managed objects.

A no-op reconciliation must not read every object it owns. A `LiveIndex` answers "does this
object exist, at which resourceVersion, and does our field manager still own what it applied?"
from metadata-only LISTs (`PartialObjectMetadataList`: no spec, no status, no data):

- *shared* (one per cluster and run, passed to every component of the run): ONE LIST per kind
  across the cluster, selected by the managed-by label, and ONE LIST of the inventory records;
  the cost of a no-op is then a handful of requests for the whole run, whatever the number of
  components or releases;
- *shared, scoped* (a run whose components live in at most `SCOPED_NAMESPACES` namespaces,
  e.g. a mothership reconciliation of a small set): the same, but one LIST per kind and
  namespace, so the answer holds the run's objects only, whatever else the cluster carries
  that another run (another set, or another "cluster" on a shared test-bed apiserver) manages;
- *per component* (the default when no run shares an index): one LIST per kind and namespace,
  selected by the component label; cluster-scoped objects by GET (a cluster-wide LIST would
  return every other release's objects of that kind too).

The signature of an object (`signature`) is a digest of its uid and of the fields our field
manager owns. Another writer that changes a field we applied takes that field over (or deletes
it), which changes our entry; status writes and fields nobody applied do not. So "resourceVersion
moved but signature did not" means the controllers wrote status or others added fields that a
re-apply would not touch anyway: no drift. Listings are taken once per index; an object that
changes after its kind was listed is seen by the next run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any

from reconciler.errors import ApplyError, KubeApiError
from reconciler.kube.client import FIELD_MANAGER, METADATA_LIST
from reconciler.kube.transform import COMPONENT, MANAGED_BY, MANAGER
from reconciler.model.kube_object import KubeObject, ObjectKey

if TYPE_CHECKING:
    from reconciler.kube.cluster import Cluster

INVENTORY = "reconciler.kyma-project.io/inventory"
"""Label of the inventory records, so that one LIST finds all of them."""

SCOPED_NAMESPACES = 3
"""A shared index of a run in at most this many namespaces lists per namespace. Beyond it one
cluster-wide LIST per kind costs fewer requests (a fan-out of 1,000 releases, a platform set)."""


Listing = dict[ObjectKey, tuple[str, "Observed"]]
"""key -> (the object's component label, its observed state)"""


class Observed:
    """An object's state as far as drift is concerned.

    The signature is digested on first use: a no-op run compares resourceVersions first, and
    an object whose resourceVersion did not move cannot have another signature, so most
    listed objects are never digested (the digest was ~30 % of a no-op's CPU per object)."""

    __slots__ = ("_ours", "_signature", "resource_version")

    def __init__(
        self, resource_version: str, signature: str = "", *, metadata: dict[str, Any] | None = None
    ) -> None:
        self.resource_version = resource_version
        self._signature = signature
        self._ours = _ours(metadata) if metadata is not None else None

    @property
    def signature(self) -> str:
        if self._ours is not None:
            self._signature, self._ours = _digest(self._ours), None
        return self._signature

    def same_as(self, resource_version: str, signature: str) -> bool:
        """The recorded state: the same resourceVersion (hence signature), or the same signature."""
        return self.resource_version == resource_version or self.signature == signature

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Observed):
            return NotImplemented
        return (self.resource_version, self.signature) == (other.resource_version, other.signature)

    def __hash__(self) -> int:
        return hash((self.resource_version, self.signature))

    def __repr__(self) -> str:
        return f"Observed({self.resource_version!r}, {self.signature!r})"


def _ours(metadata: dict[str, Any]) -> list[Any]:
    """What the signature digests: the uid and our field manager's applied fields."""
    applied = [
        [entry.get("apiVersion", ""), entry.get("fieldsV1", {})]
        for entry in metadata.get("managedFields") or []
        if entry.get("manager") == FIELD_MANAGER
        and entry.get("operation") == "Apply"
        and not entry.get("subresource")
    ]
    return [metadata.get("uid", ""), applied]


def _digest(ours: list[Any]) -> str:
    text = json.dumps(ours, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def signature(metadata: dict[str, Any]) -> str:
    """Digest of the uid and of what our field manager applied (see the module docstring)."""
    return _digest(_ours(metadata))


def observe(obj: KubeObject) -> Observed:
    return Observed(str(obj.metadata.get("resourceVersion", "")), signature(obj.metadata))


class LiveIndex:
    """Live metadata for one run; `shared=False` limits every read to one component."""

    def __init__(self, *, shared: bool = True, namespaces: Collection[str] | None = None) -> None:
        """`namespaces`: where the run's components live, when known; few of them scope the
        shared listings to those namespaces. On a cluster whose other namespaces hold many
        objects with our labels (1,000 simulated clusters on one apiserver), cluster-wide
        listings made every run read every run's objects: 16 GiB for 500 concurrent runs."""
        self.shared = shared
        self.scoped = not shared or (
            namespaces is not None and 0 < len(set(namespaces)) <= SCOPED_NAMESPACES
        )
        self._listings: dict[tuple[str, ...], asyncio.Task[Listing]] = {}
        self._records: dict[str, asyncio.Task[dict[tuple[str, str], KubeObject]]] = {}

    async def observe(
        self, cluster: Cluster, objects: Iterable[KubeObject], component: str
    ) -> dict[ObjectKey, Observed]:
        """The observed state of each of `objects` that exists and carries our labels."""
        wanted = list(objects)
        groups: dict[tuple[str, str, str], list[KubeObject]] = {}
        singles: list[KubeObject] = []
        for obj in wanted:
            if not self.shared and not obj.namespace:
                singles.append(obj)
            else:
                scope = obj.namespace if self.scoped else ""
                groups.setdefault((obj.api_version, obj.kind, scope), []).append(obj)
        listings = await asyncio.gather(
            *(self._listing(cluster, *group, component) for group in groups),
            *(self._single(cluster, obj) for obj in singles),
        )
        # look each object up in its own listing: merging the shared listings (every
        # release's objects of a kind) per component made a no-op pass quadratic
        result = {}
        asked = [*groups.values(), *([obj] for obj in singles)]
        for objects, listing in zip(asked, listings, strict=True):
            for obj in objects:
                key = obj.key
                owner, state = listing.get(key, ("", None))
                if state is not None and owner == component:
                    result[key] = state
        return result

    def _listing(
        self, cluster: Cluster, api_version: str, kind: str, namespace: str, component: str
    ) -> Awaitable[Listing]:
        selector = f"{MANAGED_BY}={MANAGER}" if self.shared else f"{COMPONENT}={component}"
        key = (api_version, kind, namespace, selector)
        return self._once(
            key, lambda: _list_metadata(cluster, api_version, kind, namespace, selector)
        )

    def _once(
        self,
        key: tuple[str, ...],
        start: Callable[[], Awaitable[Listing]],
    ) -> Awaitable[Listing]:
        task = self._listings.get(key)
        if task is None or (task.done() and not task.cancelled() and task.exception()):
            task = asyncio.ensure_future(start())
            self._listings[key] = task
        return asyncio.shield(task)

    @staticmethod
    async def _single(cluster: Cluster, obj: KubeObject) -> Listing:
        try:
            live = await cluster.get(obj)
        except ApplyError:
            return {}  # kind not served: the object cannot exist
        return {} if live is None else {live.key: (live.labels.get(COMPONENT, ""), observe(live))}

    async def record(self, cluster: Cluster, stub: KubeObject) -> KubeObject | None:
        """The inventory record `stub` names: from one LIST of all records when shared."""
        if not self.shared:
            return await cluster.get(stub)
        scope = stub.namespace if self.scoped else ""
        task = self._records.get(scope)
        if task is None or (task.done() and not task.cancelled() and task.exception()):
            task = self._records[scope] = asyncio.ensure_future(_list_records(cluster, scope))
        records = await asyncio.shield(task)
        found = records.get((stub.namespace, stub.name))
        # a record written before records were labelled is not in the LIST: ask for it
        return found if found is not None else await cluster.get(stub)


async def _list_metadata(
    cluster: Cluster, api_version: str, kind: str, namespace: str, selector: str
) -> Listing:
    try:
        info = await cluster.mapper.resolve(api_version, kind)
    except ApplyError:
        return {}  # kind not served (yet): nothing of it exists
    try:
        listing = await cluster.client.request(
            "GET",
            info.path(namespace or None),
            params={"labelSelector": selector},
            accept=METADATA_LIST,
        )
    except KubeApiError as exc:
        if exc.status == 404:
            return {}
        raise
    group = api_version.rpartition("/")[0]
    result: Listing = {}
    for item in listing.get("items") or []:  # an empty metadata LIST says `"items": null`
        meta = item.get("metadata") or {}
        key = ObjectKey(group, kind, meta.get("namespace", ""), meta.get("name", ""))
        owner = (meta.get("labels") or {}).get(COMPONENT, "")
        result[key] = (owner, Observed(str(meta.get("resourceVersion", "")), metadata=meta))
    return result


async def _list_records(cluster: Cluster, namespace: str) -> dict[tuple[str, str], KubeObject]:
    info = await cluster.mapper.resolve("v1", "ConfigMap")
    records = await cluster.list(
        info, namespace=namespace or None, label_selector=f"{INVENTORY}=true"
    )
    return {(obj.namespace, obj.name): obj for obj in records}
