"""Wait until applied objects are ready, explaining what is still missing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from reconciler.errors import ReadinessTimeout, ReconcilerError, WaitTimeout
from reconciler.kube.cluster import Cluster
from reconciler.kube.readiness import READY, WATCHED_KINDS, Readiness, readiness
from reconciler.model.kube_object import KubeObject, ObjectKey
from reconciler.util.polling import poll_until

__all__ = ["WATCHED_KINDS", "WorkloadFailed", "all_ready", "wait_established", "wait_ready"]

CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def all_ready(objects: list[KubeObject]) -> bool:
    """Whether these objects, as they are, need no waiting."""
    return all(obj.kind not in WATCHED_KINDS or readiness(obj) == READY for obj in objects)


class WorkloadFailed(ReconcilerError):
    """A workload reached a state from which waiting cannot help (e.g. a failed Job)."""


async def wait_ready(
    cluster: Cluster,
    objects: list[KubeObject],
    *,
    timeout: float,
    on_waiting: Callable[[str], None] | None = None,
) -> dict[ObjectKey, KubeObject]:
    """Poll the objects whose kind has a readiness rule until all are ready; return the objects
    as last read (those that needed polling), so callers can record their final state.
    `on_waiting` hears what still blocks after each poll (the first object not ready and its
    condition), and the workload that failed before WorkloadFailed is raised."""
    pending = {
        obj.key: obj for obj in objects if obj.kind in WATCHED_KINDS and readiness(obj) != READY
    }
    reasons: dict[object, str] = {}
    seen: dict[ObjectKey, KubeObject] = {}

    async def check(obj: KubeObject) -> tuple[KubeObject, Readiness]:
        live = await cluster.get(obj)
        if live is None:
            return obj, Readiness(False, f"{obj}: does not exist (deleted by someone else?)")
        seen[live.key] = live
        return obj, readiness(live)

    async def all_ready() -> bool:
        results = await asyncio.gather(*(check(obj) for obj in pending.values()))
        for obj, state in results:
            if state.failed:
                if on_waiting is not None:
                    on_waiting(state.reason)  # what blocks it for good
                raise WorkloadFailed(state.reason)
            if state.ready:
                pending.pop(obj.key, None)
                reasons.pop(obj.key, None)
            else:
                reasons[obj.key] = state.reason
        if pending and on_waiting is not None:
            on_waiting(next(iter(reasons.values())))
        return not pending

    def still_missing() -> str:
        shown = list(reasons.values())[:5]
        more = f" (and {len(reasons) - 5} more)" if len(reasons) > 5 else ""
        return "readiness: " + "; ".join(shown) + more

    if not pending:
        return seen
    try:
        await poll_until(
            all_ready, timeout=timeout, what=still_missing, interval=0.2, max_interval=2.0
        )
    except WaitTimeout as exc:
        raise ReadinessTimeout(str(exc)) from None
    return seen


async def wait_established(cluster: Cluster, crds: list[KubeObject], *, timeout: float) -> None:
    """Wait until these just-applied CRDs are Established, each through a watch of its own.

    Why not `wait_ready`: its polls back off (0.2 s growing to 2 s), so a set whose biggest
    CRDs take a second or two to be established was noticed up to a poll interval late, on
    every first deploy's critical path, and each poll re-read CRDs of hundreds of KB. A watch
    from the applied resourceVersion hears the change when it happens (events after that
    version only, so the apply's own state is never mistaken for the result). Should the watch
    fail (e.g. that version is too old to watch from), polling finishes the wait and its
    timeout says what is still missing.
    """
    deadline = time.monotonic() + timeout

    async def watched(crd: KubeObject) -> bool:
        params = {
            "fieldSelector": f"metadata.name={crd.name}",
            "resourceVersion": str(crd.metadata.get("resourceVersion") or ""),
            "timeoutSeconds": str(max(1, int(timeout) + 1)),
        }
        try:
            async with asyncio.timeout(timeout):
                async for event in cluster.client.watch(CRDS_PATH, params):
                    if event.get("type") not in ("ADDED", "MODIFIED"):
                        return False  # deleted, or an ERROR (410 Gone): let polling decide
                    if readiness(KubeObject(event["object"])) == READY:
                        return True
        except (ReconcilerError, TimeoutError):
            pass
        return False

    async def one(crd: KubeObject) -> None:
        if readiness(crd) == READY or await watched(crd):
            return
        await wait_ready(cluster, [crd], timeout=max(deadline - time.monotonic(), 0.1))

    await asyncio.gather(*(one(crd) for crd in crds))
