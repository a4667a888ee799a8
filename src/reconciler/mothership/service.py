"""The mothership's Python API: what the REST layer and the admin CLI call.

Each method is one use case (upsert a cluster, delete or forget it, read its state and health,
change its status, list reconciliations, stop an operation). Changes wake the scheduler at once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from reconciler.errors import ConflictError, ForbiddenError, NotFoundError
from reconciler.kube import kubeconfig
from reconciler.model.cluster import (
    ClusterSpec,
    ClusterState,
    ConfigVersion,
    Head,
    StatusChange,
)
from reconciler.model.health import ClusterHealth, Health
from reconciler.model.operation import Operation, Reconciliation
from reconciler.model.remote import CallbackMessage
from reconciler.model.status import ClusterStatus, OperationState, StatusTransitionError
from reconciler.mothership.notifier import Channel, Notifier
from reconciler.store.callback_secrets import CallbackSecrets
from reconciler.store.fleet import FleetPage, FleetQueries, FleetQuery
from reconciler.store.inventory import InventoryRepository, StaleStatus
from reconciler.store.reconciliations import ReconciliationRepository
from reconciler.util.secrecy import Scrubber

S = ClusterStatus
USER_STATUSES = {S.RECONCILE_DISABLED, S.READY, S.RECONCILE_PENDING}
RERUN_ON_REPOST = {S.READY, S.ERROR, S.RECONCILE_ERROR_RETRYABLE, S.RECONCILING}
"""Statuses an identical upsert moves to `reconcile_pending`, as the original wrote
`reconcile_pending` on every upsert (the broker re-posts a cluster to retry it). During a run the
request is newer than the run's outcome: another run follows it. A pending cluster already waits
for one; a disabled one stays disabled; one being deleted is not re-created by a re-post."""


LIVE_HEALTHS = (Health.HEALTHY, Health.PROGRESSING)
"""Healths in which forgetting a cluster needs a confirmation: its apiserver answers."""
FORGOTTEN = "forgotten: the cluster was removed from the inventory without an uninstall"


@dataclass(frozen=True)
class Failure:
    component: str
    reason: str


class MothershipService:
    def __init__(
        self, inventory: InventoryRepository, repo: ReconciliationRepository, notifier: Notifier
    ) -> None:
        self.inventory = inventory
        self.repo = repo
        self.notifier = notifier
        self.callback_secrets = CallbackSecrets(repo.engine)
        self.fleet_queries = FleetQueries(repo.engine)

    async def upsert_cluster(self, spec: ClusterSpec) -> ClusterState:
        """Store the cluster; a changed one, or an identical one that is ready, failed or
        running, becomes `reconcile_pending`."""
        state, changed = await self.inventory.upsert(spec)
        if not changed and state.status in RERUN_ON_REPOST:
            try:
                state = await self.inventory.set_status(
                    spec.runtime_id,
                    S.RECONCILE_PENDING,
                    seen=(state.status, state.status_changed),
                )
                changed = True
            except (StaleStatus, StatusTransitionError):
                state = await self.inventory.latest(spec.runtime_id)  # someone else moved it
        if changed:
            await self.notifier.notify(Channel.CLUSTERS)
        return state

    async def delete_cluster(self, runtime_id: str) -> ClusterState:
        current = await self.inventory.latest(runtime_id)
        if current.status in (S.DELETE_PENDING, S.DELETING, S.DELETED):
            return current
        state = await self.inventory.set_status(runtime_id, S.DELETE_PENDING)
        await self.notifier.notify(Channel.CLUSTERS)
        return state

    async def forget_cluster(self, runtime_id: str, *, confirm: bool = False) -> ClusterState:
        """Remove a cluster whose infrastructure is gone: no uninstall, the inventory marked
        deleted, an active run ended. Refused (ConflictError) while the cluster is healthy or
        progressing, unless `confirm`: then its apiserver answers, and whatever was installed
        stays installed. NotFoundError for an unknown (or already deleted) cluster."""
        health = await self.inventory.health(runtime_id)
        if health.health is Health.DELETED:
            raise NotFoundError(f"cluster {runtime_id} not found")
        answers = health.health in LIVE_HEALTHS or (
            health.health is Health.DISABLED and health.evidence.result is Health.HEALTHY
        )
        if answers and not confirm:
            raise ConflictError(
                f"cluster {runtime_id} is {health.health}: its apiserver answers, and forgetting"
                " it leaves everything installed on it. Delete it (uninstall) instead, or"
                " confirm that it is to be forgotten anyway"
            )
        state = await self.repo.forget(runtime_id, FORGOTTEN)
        await self.notifier.notify(Channel.CLUSTERS)
        await self.notifier.notify(Channel.FINISHED)
        return state

    async def health(self, runtime_id: str) -> ClusterHealth:
        """The cluster's health and the evidence behind it (NotFoundError when unknown)."""
        return await self.inventory.health(runtime_id)

    async def healths(self) -> dict[str, ClusterHealth]:
        """The health of every cluster that is not deleted, by runtime ID."""
        return {h.runtime_id: h for h in await self.inventory.healths()}

    async def restore_config(self, runtime_id: str, config_version: int) -> ClusterState:
        """Roll the cluster back to an earlier configuration: a new version equal to
        `config_version`, marked as restored from it, and a reconciliation of it scheduled
        (a disabled cluster stores it and stays disabled). NotFoundError for an unknown
        cluster or version, ConflictError for a cluster being deleted."""
        state = await self.inventory.restore(runtime_id, config_version)
        await self.notifier.notify(Channel.CLUSTERS)
        return state

    async def configs(self, runtime_id: str, *, last: int = 100) -> list[ConfigVersion]:
        """The cluster's configuration history, newest first (rollbacks name their source)."""
        return await self.inventory.configs(runtime_id, last=last)

    async def clusters(self) -> list[Head]:
        """Every cluster that is not deleted: latest versions and status."""
        return await self.inventory.heads(
            [s for s in ClusterStatus if s is not S.DELETED], limit=1_000_000
        )

    async def fleet(self, query: FleetQuery) -> FleetPage:
        """One page of clusters with status, Kyma version, latest run and failed components,
        and the counts per status (the console's fleet view)."""
        return await self.fleet_queries.page(query)

    async def cluster(self, runtime_id: str) -> ClusterState:
        return await self.inventory.latest(runtime_id)

    async def cluster_at(self, runtime_id: str, config_version: int) -> ClusterState:
        return await self.inventory.at_config(runtime_id, config_version)

    async def config_status(self, runtime_id: str, config_version: int) -> ClusterState:
        """The cluster as of that configuration version, with that version's own (last)
        status: an older version reports how it ended, not what the cluster does now."""
        return await self.inventory.at_config(runtime_id, config_version, own_status=True)

    async def state_by(
        self,
        *,
        runtime_id: str | None = None,
        scheduling_id: str | None = None,
        correlation_id: str | None = None,
    ) -> ClusterState:
        """The latest state, or the state a reconciliation/operation was working on."""
        if scheduling_id:
            reconciliation, _ = await self.repo.get(scheduling_id)
            return await self.inventory.at_config(
                reconciliation.runtime_id, reconciliation.config_version
            )
        if correlation_id:
            op = await self.repo.find_by_correlation(correlation_id)
            return await self.inventory.at_config(op.runtime_id, op.config_version)
        if runtime_id:
            return await self.inventory.latest(runtime_id)
        raise NotFoundError("give a runtimeID, schedulingID or correlationID")

    async def set_status(self, runtime_id: str, status: ClusterStatus) -> ClusterState:
        """Disable (`reconcile_disabled`), enable (`ready`) or force a run
        (`reconcile_pending`).

        Nothing set by hand claims a result: enabling makes the cluster `reconcile_pending` (a
        run that re-verifies it is scheduled at once, and its health stays what the last run
        proved until this one proves otherwise), as forcing a run does."""
        if status not in USER_STATUSES:
            raise ConflictError(
                f"status {status} cannot be set by hand; allowed: "
                + ", ".join(sorted(s.value for s in USER_STATUSES))
            )
        current = await self.inventory.latest(runtime_id)
        if status is S.READY:
            if current.status is not S.RECONCILE_DISABLED:
                return current  # enabling a cluster that is not disabled changes nothing
            status = S.RECONCILE_PENDING
        state = await self.inventory.set_status(runtime_id, status)
        await self.notifier.notify(Channel.CLUSTERS)
        return state

    async def status_changes(self, runtime_id: str, since: dt.timedelta) -> list[StatusChange]:
        return await self.inventory.status_changes(runtime_id, since)

    async def failures(self, state: ClusterState) -> list[Failure]:
        """Why the cluster's latest reconciliation failed (empty unless it did)."""
        if state.status not in (
            S.ERROR,
            S.DELETE_ERROR,
            S.RECONCILE_ERROR_RETRYABLE,
            S.DELETE_ERROR_RETRYABLE,
        ):
            return []
        latest = await self.repo.latest_for(state.runtime_id)
        if latest is None or latest.config_version != state.config_version:
            return []  # the latest run worked on another version
        _, ops = await self.repo.get(latest.scheduling_id)
        return [
            Failure(op.component, op.reason)
            for op in ops
            if op.state in (OperationState.ERROR, OperationState.CLIENT_ERROR)
        ]

    async def reconciliations(
        self,
        *,
        runtime_ids: Sequence[str] = (),
        statuses: Sequence[str] = (),
        before: dt.datetime | None = None,
        after: dt.datetime | None = None,
        last: int | None = None,
    ) -> list[Reconciliation]:
        return await self.repo.list(
            runtime_ids=runtime_ids, statuses=statuses, before=before, after=after, last=last
        )

    async def reconciliation(self, scheduling_id: str) -> tuple[Reconciliation, list[Operation]]:
        return await self.repo.get(scheduling_id)

    async def delete_reconciliations(self, runtime_id: str) -> int:
        return await self.repo.delete_for_cluster(runtime_id)

    async def operation(self, scheduling_id: str, correlation_id: str) -> Operation:
        return await self.repo.operation(scheduling_id, correlation_id)

    async def callback(
        self,
        scheduling_id: str,
        correlation_id: str,
        message: CallbackMessage,
        *,
        secret: str,
        orphan_timeout: float,
    ) -> Operation:
        """Record a component reconciler's report on an operation.

        `running` keeps the operation alive, `failed` means the remote retries (the operation
        waits, claimable again only when the remote goes silent for the orphan timeout),
        `success`/`error` are final. Only the holder of the callback secret of the operation's
        latest hand-over may report (ForbiddenError otherwise, checked before anything about
        the operation's state or existence is revealed: an unknown operation is refused the
        same way). A callback for a final operation is a ConflictError.
        """
        # the secret first: an unknown operation is refused as a wrong secret is (a 404 would
        # tell a caller without any secret which operations exist)
        if not await self.callback_secrets.verify((scheduling_id, correlation_id), secret):
            raise ForbiddenError(
                f"operation {correlation_id}: missing or wrong callback secret"
                " (not the component reconciler this operation was handed to)"
            )
        op = await self.repo.operation(scheduling_id, correlation_id)
        if op.state.final:
            raise ConflictError(f"operation {correlation_id} is already {op.state}")
        # a reason or blocker is stored and shown: never with the cluster's secrets
        texts = {name: getattr(message, name) for name in ("error", "blocker")}
        if any(texts.values()):
            scrub = await self._scrubber(op)
            message = message.model_copy(update={k: scrub(v) for k, v in texts.items()})
        state = message.status.operation_state
        live = (OperationState.IN_PROGRESS, OperationState.FAILED, OperationState.ORPHAN)
        # what blocks readiness: kept until a report names another one, cleared on success
        blocker = "" if state is OperationState.DONE else message.blocker or None
        if state is OperationState.FAILED:
            changed = await self.repo.update(
                op.key,
                state,
                expect=live,
                reason=message.error,
                retry_after=dt.timedelta(seconds=orphan_timeout),
                blocker=blocker,
            )
        else:
            changed = await self.repo.update(
                op.key,
                state,
                expect=live,
                reason=message.error if state.final else None,
                blocker=blocker,
            )
        if not changed:
            current = await self.repo.operation(scheduling_id, correlation_id)
            raise ConflictError(f"operation {correlation_id} is {current.state}")
        if state.final:
            await self.notifier.notify(Channel.FINISHED)
        return await self.repo.operation(scheduling_id, correlation_id)

    async def _scrubber(self, op: Operation) -> Scrubber:
        config = await self.inventory.at_config(op.runtime_id, op.config_version)
        return kubeconfig.scrubber(config.spec.kubeconfig, config.spec.secret_values())

    async def stop_operation(self, scheduling_id: str, correlation_id: str, reason: str) -> None:
        await self.repo.stop(scheduling_id, correlation_id, reason)
        await self.notifier.notify(Channel.FINISHED)
