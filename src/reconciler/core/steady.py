"""The no-op fast path: a component whose inputs did not change since its last complete run.

Nothing is rendered or applied unless the cluster moved. The record (inventory) holds each
object's resourceVersion and signature as observed after readiness; the run's `LiveIndex` gives
the live ones from metadata-only LISTs. Per object:
- missing, or signature changed (someone else took over or removed a field we applied, or the
  object was re-created): *drift*, re-apply exactly that object, then wait for it;
- resourceVersion moved, signature not (status writes, fields nobody applied): nothing to apply;
  an object with a readiness rule is read once to check it is still ready;
- unchanged: ready as recorded, nothing to do, nothing to write.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

from reconciler.core.results import Outcome, Phase
from reconciler.kube import records
from reconciler.kube.apply import apply_objects
from reconciler.kube.cluster import Cluster
from reconciler.kube.live import LiveIndex
from reconciler.kube.wait import WATCHED_KINDS, wait_ready
from reconciler.model.kube_object import KubeObject, ObjectKey
from reconciler.model.task import Task


class SteadyState:
    """One component's fast-path run against its record."""

    def __init__(
        self, cluster: Cluster, task: Task, record: records.Record, index: LiveIndex
    ) -> None:
        self.cluster = cluster
        self.task = task
        self.record = record
        self.index = index

    async def check(
        self,
        desired: Callable[[set[ObjectKey]], Awaitable[tuple[list[KubeObject], str]]],
        outcome: Outcome,
        phase: Phase,
        *,
        concurrency: int,
    ) -> bool:
        """Bring drifted objects back; False when the full path must run instead (the record
        lists an object the render no longer has, or lacks observed state).

        `desired(existing)`: the objects to apply, with the generated values of the `existing`
        ones kept, and the generated paths to record."""
        task, cluster = self.task, self.cluster
        entries = self.record.by_key()
        if not entries or any(entry.observed is None for entry in entries.values()):
            return False
        phase("checking live state")
        observed = await self.index.observe(
            cluster, [entry.as_object() for entry in entries.values()], task.component
        )
        drifted: list[ObjectKey] = []
        moved: list[ObjectKey] = []
        for key, entry in entries.items():
            now = observed.get(key)
            if now is None or not now.same_as(entry.rv, entry.sig):
                drifted.append(key)
            elif now.resource_version != entry.rv:
                moved.append(key)
        outcome.checked = len(entries)
        recheck = [entries[key].as_object() for key in moved if entries[key].kind in WATCHED_KINDS]
        if not drifted and not (task.wait and recheck):
            outcome.record = self.record
            return True  # the no-op: nothing applied, nothing written
        final: dict[ObjectKey, KubeObject] = {}
        record = self.record
        if drifted:
            objects, generated = await desired({key for key in drifted if key in observed})
            record = replace(record, generated=generated)
            by_key = {obj.key: obj for obj in objects}
            if any(key not in by_key for key in drifted):
                return False
            result = await apply_objects(
                cluster,
                [by_key[key] for key in drifted],
                before={k: observed[k].resource_version for k in drifted if k in observed},
                concurrency=concurrency,
                on_phase=phase,
            )
            outcome.applied = len(result.live)
            outcome.changed = result.changed
            outcome.warnings.extend(result.warnings)
            final.update((live.key, live) for live in result.live)
        if task.wait:
            phase("waiting for readiness")
            waited = [*final.values(), *recheck]
            final.update(
                await wait_ready(cluster, waited, timeout=task.timeout, on_waiting=phase.blocked)
            )
        updated = [
            records.Entry.of(final[key]) if key in final else entry.seen(observed.get(key))
            for key, entry in entries.items()
        ]
        outcome.record = replace(record, entries=updated)
        await records.write(cluster, outcome.record)
        return True
