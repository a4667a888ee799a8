"""Delete a component's objects in reverse dependency order and wait until they are gone.

Order: custom resources of the component's own CRDs (their controllers may need to run
finalizers while the component still exists), then namespaced objects, then cluster-scoped ones,
then the CRDs, and namespaces last, and a namespace only when nothing that belongs to someone
else is left in it. By then the namespace holds only what Kubernetes puts into every namespace,
which no other component's controller or webhook acts on; its controller still takes ~5 s to
finalize it. A caller deleting several components in order may collect those waits
(`NamespaceWaits`) and await them once at the end instead of once per component.

Objects of kinds the cluster does not serve (a CRD never installed, a `batch/v1` CronJob on
1.20) cannot exist: they count as deleted, not as a failure. Objects annotated
`helm.sh/resource-policy: keep` are left in place, as Helm leaves them on uninstall and when an
upgrade drops them (with the custom resources of a kept CRD, and the namespace they are in);
each is named in the warnings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from reconciler.errors import ApplyError, KubeApiError, ReadinessTimeout, WaitTimeout
from reconciler.kube.cluster import Cluster
from reconciler.kube.discovery import ResourceInfo
from reconciler.kube.transform import COMPONENT
from reconciler.model.kube_object import KubeObject, ObjectKey
from reconciler.util.polling import poll_until

# Objects Kubernetes itself puts into every namespace; they never make a namespace "foreign".
_AUTOMATIC = {("ServiceAccount", "default"), ("ConfigMap", "kube-root-ca.crt")}
_AUTOMATIC_KINDS = {"Event", "Endpoints", "EndpointSlice", "Lease"}
RESOURCE_POLICY = "helm.sh/resource-policy"
KEEP = "keep"


def keeps(obj: KubeObject) -> bool:
    """Whether the object asks to outlive its chart (`helm.sh/resource-policy: keep`; Helm trims
    and lower-cases the value)."""
    policy = obj.annotations.get(RESOURCE_POLICY)
    return isinstance(policy, str) and policy.strip().lower() == KEEP


def _crd_kinds(objects: list[KubeObject]) -> set[tuple[str, str]]:
    kinds = set()
    for obj in objects:
        if obj.is_crd:
            spec = obj.raw.get("spec", {})
            kinds.add((spec.get("group", ""), spec.get("names", {}).get("kind", "")))
    return kinds


def delete_waves(objects: list[KubeObject]) -> list[list[KubeObject]]:
    """Group objects into the waves deletion runs in (custom resources ... namespaces)."""
    crd_kinds = _crd_kinds(objects)
    waves: list[list[KubeObject]] = [[], [], [], [], []]
    for obj in objects:
        if obj.is_namespace:
            waves[4].append(obj)
        elif obj.is_crd:
            waves[3].append(obj)
        elif (obj.group, obj.kind) in crd_kinds:
            waves[0].append(obj)
        elif obj.namespace:
            waves[1].append(obj)
        else:
            waves[2].append(obj)
    return [wave for wave in waves if wave]


async def without_unserved(
    cluster: Cluster, objects: list[KubeObject]
) -> tuple[list[KubeObject], list[str]]:
    """The objects whose kind the cluster serves (or a CRD among them defines), and a note per
    kind it does not serve: nothing of such a kind can exist, so it is already deleted."""
    defined = _crd_kinds(objects)
    served: dict[tuple[str, str], bool] = {}
    kept: list[KubeObject] = []
    for obj in objects:
        kind = (obj.api_version, obj.kind)
        if kind not in served:
            try:
                served[kind] = (obj.group, obj.kind) in defined or bool(await cluster.info(obj))
            except ApplyError:
                served[kind] = False
        if served[kind]:
            kept.append(obj)
    notes = [
        f"nothing to delete of kind {kind} in {api_version}: the cluster does not serve it"
        for (api_version, kind), is_served in sorted(served.items())
        if not is_served
    ]
    return kept, notes


async def _gone(cluster: Cluster, objects: list[KubeObject], timeout: float) -> None:
    remaining = list(objects)

    async def all_gone() -> bool:
        found = await asyncio.gather(*(cluster.get(obj) for obj in remaining))
        remaining[:] = [obj for obj, live in zip(remaining, found, strict=True) if live]
        return not remaining

    def what() -> str:
        return "deletion of " + ", ".join(str(o) for o in remaining[:5])

    try:
        await poll_until(all_gone, timeout=timeout, what=what, interval=0.1, max_interval=1.0)
    except WaitTimeout as exc:
        raise ReadinessTimeout(str(exc)) from None


class NamespaceWaits:
    """Namespaces whose deletion was requested, to wait for together at the end of a run."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._pending: list[tuple[str, list[KubeObject], float]] = []

    def add(self, component: str, namespaces: list[KubeObject], timeout: float) -> None:
        self._pending.append((component, namespaces, timeout))

    def pending(self) -> dict[str, list[str]]:
        """The namespaces still to wait for, by component."""
        found: dict[str, list[str]] = {}
        for component, namespaces, _ in self._pending:
            found.setdefault(component, []).extend(ns.name for ns in namespaces)
        return found

    async def wait(self) -> dict[str, str]:
        """Wait for every collected namespace to be gone; the error per component whose
        namespace is still there at its deadline."""

        async def one(namespaces: list[KubeObject], timeout: float) -> str | None:
            try:
                await _gone(self.cluster, namespaces, timeout)
            except ReadinessTimeout as exc:
                return str(exc)
            return None

        pending, self._pending = self._pending, []
        errors = await asyncio.gather(*(one(ns, timeout) for _, ns, timeout in pending))
        return {
            component: error
            for (component, _, _), error in zip(pending, errors, strict=True)
            if error is not None
        }


async def live_custom_resources(cluster: Cluster, crds: list[KubeObject]) -> list[KubeObject]:
    """Every object of the given CRDs' kinds that exists in the cluster."""
    found: list[KubeObject] = []
    for crd in crds:
        spec = crd.raw.get("spec", {})
        for version in spec.get("versions", []):
            if not version.get("storage"):
                continue
            info = ResourceInfo(
                spec.get("group", ""),
                version["name"],
                spec["names"]["kind"],
                spec["names"]["plural"],
                spec.get("scope") == "Namespaced",
            )
            try:
                found.extend(await cluster.list(info))
            except KubeApiError:
                continue  # CRD not established (any more): nothing to delete
    return found


async def foreign_objects(
    cluster: Cluster, namespace: str, ours: set[ObjectKey], component: str
) -> list[str]:
    """Objects in `namespace` that the component does not own (and Kubernetes did not add)."""
    resources = await cluster.mapper.namespaced_resources()

    async def scan(info: ResourceInfo) -> list[str]:
        if info.kind in _AUTOMATIC_KINDS:
            return []
        try:
            items = await cluster.list(info, namespace=namespace, limit=50)
        except KubeApiError:
            return []  # not listable (e.g. bindings, reviews)
        return [
            f"{info.kind.lower()} {namespace}/{item.name}"
            for item in items
            if item.key not in ours
            and (info.kind, item.name) not in _AUTOMATIC
            and not item.metadata.get("ownerReferences")
            and item.labels.get(COMPONENT) != component
            and (item.raw.get("type") != "kubernetes.io/service-account-token")
        ]

    results = await asyncio.gather(*(scan(info) for info in resources))
    return [name for found in results for name in found]


async def delete_objects(
    cluster: Cluster,
    objects: list[KubeObject],
    *,
    component: str,
    timeout: float,
    on_phase: Callable[[str], None] | None = None,
    warnings: list[str] | None = None,
    namespace_waits: NamespaceWaits | None = None,
) -> list[KubeObject]:
    """Delete `objects` wave by wave; return those actually deleted. With `namespace_waits`,
    the wait for the namespaces to be gone goes there instead of being done here.

    The keep policy is read from the objects as given (rendered or live); a bare reference (an
    inventory entry: kind and name only) is read from the cluster first, since what the chart
    rendered then, and Helm would read from its release, is not at hand."""
    objects = await _with_annotations(cluster, objects)
    kept = [obj for obj in objects if keeps(obj)]
    if kept:
        if on_phase:
            on_phase(f"keeping {len(kept)} objects ({RESOURCE_POLICY}: {KEEP})")
        if warnings is not None:
            warnings.extend(f"{obj} kept: annotated {RESOURCE_POLICY}: {KEEP}" for obj in kept)
        objects = [obj for obj in objects if not keeps(obj)]
    crds = [obj for obj in objects if obj.is_crd]
    extra = await live_custom_resources(cluster, crds) if crds else []
    keys = {obj.key for obj in objects}
    everything = extra + [obj for obj in objects if obj.key not in {e.key for e in extra}]
    deleted: list[KubeObject] = []
    for wave in delete_waves(everything):
        if wave[0].is_namespace:
            wave = await _deletable_namespaces(
                cluster, wave, keys, component, warnings, {obj.key for obj in kept}
            )
            if not wave:
                continue
        if on_phase:
            on_phase(f"deleting {len(wave)} {wave[0].kind if len(wave) == 1 else 'objects'}")
        done = await asyncio.gather(*(cluster.delete(obj) for obj in wave))
        gone = [obj for obj, was in zip(wave, done, strict=True) if was]
        deleted.extend(gone)
        if namespace_waits is not None and gone and gone[0].is_namespace:
            namespace_waits.add(component, gone, timeout)
        else:
            await _gone(cluster, gone, timeout)
    return deleted


def _is_reference(obj: KubeObject) -> bool:
    return set(obj.raw) <= {"apiVersion", "kind", "metadata"} and set(obj.metadata) <= {
        "name",
        "namespace",
    }


async def _with_annotations(cluster: Cluster, objects: list[KubeObject]) -> list[KubeObject]:
    """`objects` with each bare reference replaced by its live object (or kept as it is when it
    is gone or its kind is not served: there is nothing to keep)."""
    references = [index for index, obj in enumerate(objects) if _is_reference(obj)]
    if not references:
        return objects

    async def live(obj: KubeObject) -> KubeObject | None:
        try:
            return await cluster.get(obj)
        except ApplyError:
            return None

    found = await asyncio.gather(*(live(objects[index]) for index in references))
    result = list(objects)
    for index, obj in zip(references, found, strict=True):
        if obj is not None:
            result[index] = obj
    return result


async def _deletable_namespaces(
    cluster: Cluster,
    namespaces: list[KubeObject],
    ours: set[ObjectKey],
    component: str,
    warnings: list[str] | None,
    kept: set[ObjectKey],
) -> list[KubeObject]:
    keep: list[KubeObject] = []
    for ns in namespaces:
        foreign = [f"{key} (kept)" for key in sorted(kept) if key.namespace == ns.name]
        foreign = foreign or await foreign_objects(cluster, ns.name, ours, component)
        if foreign:
            if warnings is not None:
                warnings.append(
                    f"namespace {ns.name} kept: it holds objects the component does not own "
                    f"({', '.join(foreign[:3])}{'...' if len(foreign) > 3 else ''})"
                )
        else:
            keep.append(ns)
    return keep
