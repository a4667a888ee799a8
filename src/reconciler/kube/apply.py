"""Apply a component's objects in the order Kubernetes needs, concurrently where it can.

CRDs and Namespaces go first (and CRDs must be Established before custom resources of them can
be applied); everything else follows concurrently with a bounded pool. Every object the
apiserver rejects is reported with its name and the apiserver's reason; the others still apply,
so one bad object does not leave a half-applied component without an explanation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from reconciler.errors import ApplyError, ReconcilerError
from reconciler.kube.cluster import Cluster
from reconciler.kube.readiness import READY, readiness
from reconciler.kube.transform import prepare
from reconciler.kube.wait import wait_established
from reconciler.model.kube_object import KubeObject, ObjectKey
from reconciler.model.task import Stamp
from reconciler.util.text import count


@dataclass
class ApplyResult:
    live: list[KubeObject] = field(default_factory=list)
    changed: list[ObjectKey] = field(default_factory=list)
    """Objects this apply created or changed (drift reverted, upgrade, new)."""
    warnings: list[str] = field(default_factory=list)


def is_first_wave(obj: KubeObject) -> bool:
    return obj.is_crd or obj.is_namespace


def _crd_scopes(objects: list[KubeObject]) -> dict[tuple[str, str], bool]:
    """(group, kind) -> namespaced, for kinds defined by CRDs in the same set."""
    scopes = {}
    for obj in objects:
        if obj.is_crd:
            spec = obj.raw.get("spec", {})
            kind = spec.get("names", {}).get("kind", "")
            scopes[(spec.get("group", ""), kind)] = spec.get("scope") == "Namespaced"
    return scopes


async def prepare_all(
    cluster: Cluster,
    objects: list[KubeObject],
    *,
    namespace: str,
    version: str,
    component: str,
    stamp: Stamp | None = None,
) -> tuple[list[KubeObject], list[str]]:
    """Resolve each object's scope and prepare it for applying (see `transform.prepare`).

    Kinds defined by CRDs of the same set are not served yet; their scope comes from the CRD.
    A kind the cluster does not serve fails here, before anything is applied. An object rendered
    more than once (two templates, or two subcharts, with the same kind and name) is applied
    once, as its last rendering: Helm applies them in order, so the last one is what stays, while
    applying both at once left the object to whichever apply came last, differently each run.
    """
    scopes = _crd_scopes(objects)
    warnings: list[str] = []
    result: dict[ObjectKey, KubeObject] = {}
    times: dict[ObjectKey, int] = {}
    for obj in objects:
        namespaced = scopes.get((obj.group, obj.kind))
        if namespaced is None:
            namespaced = (await cluster.info(obj)).namespaced
        ready, notes = prepare(
            obj,
            namespace=namespace,
            namespaced=namespaced,
            version=version,
            component=component,
            stamp=stamp,
        )
        times[ready.key] = times.get(ready.key, 0) + 1
        result.pop(ready.key, None)  # the last rendering takes the last one's place
        result[ready.key] = ready
        warnings.extend(notes)
    warnings.extend(
        f"{key} is rendered {count} times: the last one is applied, as Helm applies it"
        for key, count in times.items()
        if count > 1
    )
    return list(result.values()), warnings


async def apply_objects(
    cluster: Cluster,
    objects: list[KubeObject],
    *,
    before: dict[ObjectKey, str],
    concurrency: int = 16,
    crd_timeout: float = 60.0,
    on_phase: Callable[[str], None] | None = None,
) -> ApplyResult:
    """Apply prepared objects; raise ApplyError naming every rejected object.

    `before` holds the resourceVersions from before the apply: an object counts as changed when
    the apply moved it (new, upgraded, or drift reverted).
    """
    result = ApplyResult()
    limit = asyncio.Semaphore(concurrency)
    errors: list[str] = []

    async def one(obj: KubeObject) -> None:
        async with limit:
            try:
                live = await cluster.apply(obj)
            except ReconcilerError as exc:
                errors.append(str(exc))
                return
        result.live.append(live)
        if before.get(live.key) != live.metadata.get("resourceVersion"):
            result.changed.append(live.key)

    first = [obj for obj in objects if is_first_wave(obj)]
    rest = [obj for obj in objects if not is_first_wave(obj)]
    if first:
        if on_phase:
            on_phase(f"applying {len(first)} CRDs/namespaces")
        await asyncio.gather(*(one(obj) for obj in first))
        if errors:
            raise ApplyError("; ".join(errors))
        crds = [live for live in result.live if live.is_crd]
        if crds:
            if on_phase:
                on_phase(f"waiting for {len(crds)} CRDs to be established")
            new = [crd for crd in crds if readiness(crd) != READY]
            await wait_established(cluster, crds, timeout=crd_timeout)
            cluster.mapper.invalidate_groups(crd.raw["spec"]["group"] for crd in crds)
            cluster.warm(new)  # their first custom resources would pay for serving them
    if rest:
        if on_phase:
            on_phase(f"applying {count(len(rest), 'object')}")
        await asyncio.gather(*(one(obj) for obj in rest))
    if errors:
        shown = "; ".join(errors[:5])
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise ApplyError(f"{count(len(errors), 'object')} rejected: {shown}{more}")
    return result
