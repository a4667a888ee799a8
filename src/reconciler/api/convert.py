"""From the engine's domain objects to the v1 wire format, and from an accepted request to a
`ClusterSpec`.

Kept apart from the routes so the mapping rules live in one place: cluster responses show
`*_retryable` statuses as `reconciling`/`deleting` (the reconciliation list and info keep the
raw status), secret configuration values are redacted, and kubeconfigs are never mapped at all.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from reconciler.api import schemas as s
from reconciler.api.durations import nanoseconds
from reconciler.kube.kubeconfig import as_text
from reconciler.model.cluster import (
    ClusterSpec,
    ClusterState,
    ComponentConfig,
    ConfigVersion,
    KymaConfig,
    StatusChange,
)
from reconciler.model.health import ClusterHealth
from reconciler.model.operation import Operation, Reconciliation
from reconciler.mothership.service import Failure
from reconciler.util.secrecy import REDACTED

CONTRACT = 1


def spec_from(body: s.ClusterIn) -> ClusterSpec:
    data = body.model_dump()
    data["kubeconfig"] = as_text(body.kubeconfig)
    return ClusterSpec.model_validate(data)


def status_url(base_url: str, runtime_id: str, config_version: int) -> str:
    """Where the broker polls a configuration's status (the original's `configs` spelling)."""
    return f"{base_url.rstrip('/')}/v1/clusters/{runtime_id}/configs/{config_version}/status"


def cluster_response(
    state: ClusterState,
    failures: Sequence[Failure],
    base_url: str,
    health: ClusterHealth | None = None,
) -> s.ClusterResponse:
    return s.ClusterResponse(
        cluster=state.runtime_id,
        clusterVersion=state.cluster_version,
        configurationVersion=state.config_version,
        status=state.status.public,
        statusURL=status_url(base_url, state.runtime_id, state.config_version),
        failures=[s.FailureOut(component=f.component, reason=f.reason) for f in failures],
        health=cluster_health(health) if health is not None else None,
    )


def cluster_health(health: ClusterHealth) -> s.ClusterHealthOut:
    evidence = health.evidence
    bad = health.health.bad
    return s.ClusterHealthOut(
        health=health.health,
        failingSince=evidence.failing_since if bad else None,
        consecutiveFailures=evidence.consecutive_failures if bad else 0,
        component=evidence.component if bad else "",
        reason=evidence.reason if bad else "",
        lastSuccess=evidence.last_success,
        checkedConfigVersion=evidence.config_version,
        deleting=health.deleting,
        summary=health.summary,
    )


def component(config: ComponentConfig) -> s.ComponentOut:
    return s.ComponentOut(
        component=config.component,
        namespace=config.namespace,
        URL=config.url,
        version=config.version,
        configuration=[
            s.ConfigEntryOut(
                key=entry.key, value=REDACTED if entry.secret else entry.value, secret=entry.secret
            )
            for entry in config.configuration
        ],
        regenerate=config.regenerate,
    )


def kyma_config(config: KymaConfig) -> s.KymaConfigOut:
    return s.KymaConfigOut(
        version=config.version,
        profile=config.profile,
        components=[component(c) for c in config.components],
        administrators=list(config.administrators),
    )


def cluster_state(state: ClusterState) -> s.ClusterStateResponse:
    spec = state.spec
    metadata = spec.metadata
    return s.ClusterStateResponse(
        cluster=s.ClusterStateCluster(
            version=state.cluster_version,
            runtimeID=state.runtime_id,
            runtime=s.RuntimeInputOut(
                name=spec.runtime_input.name, description=spec.runtime_input.description
            ),
            metadata=s.MetadataOut(
                globalAccountID=metadata.global_account_id,
                subAccountID=metadata.sub_account_id,
                serviceID=metadata.service_id,
                servicePlanID=metadata.service_plan_id,
                servicePlanName=metadata.service_plan_name,
                shootName=metadata.shoot_name,
                instanceID=metadata.instance_id,
                region=metadata.region,
            ),
            contract=CONTRACT,
        ),
        configuration=s.ClusterStateConfiguration(
            version=state.config_version,
            runtimeID=state.runtime_id,
            clusterVersion=state.cluster_version,
            kymaVersion=spec.kyma_config.version,
            kymaProfile=spec.kyma_config.profile,
            components=[component(c) for c in spec.kyma_config.components],
            administrators=list(spec.kyma_config.administrators),
            contract=CONTRACT,
            deleted=state.deleted,
        ),
        status=s.ClusterStateStatus(
            runtimeID=state.runtime_id,
            clusterVersion=state.cluster_version,
            configVersion=state.config_version,
            status=state.status.public,
            deleted=state.deleted,
            created=state.status_changed,
        ),
    )


def status_changes(changes: Sequence[StatusChange]) -> s.StatusChangesResponse:
    return s.StatusChangesResponse(
        statusChanges=[
            s.StatusChangeOut(
                started=c.started,
                duration=nanoseconds(c.duration),
                status=c.status.public,
                configVersion=c.config_version or None,
                restoredFrom=c.restored_from,
                health=c.health,
            )
            for c in changes
        ]
    )


def reconciliation(item: Reconciliation, shoot_name: str) -> s.ReconciliationOut:
    return s.ReconciliationOut(
        lock=item.runtime_id if item.active else "",
        runtimeID=item.runtime_id,
        shootName=shoot_name,
        schedulingID=item.scheduling_id,
        created=item.created,
        updated=item.updated,
        status=item.status,
        finished=not item.active,
    )


def operation(op: Operation, now: dt.datetime | None = None) -> s.OperationOut:
    end = op.updated if op.state.final else (now or dt.datetime.now(dt.UTC))
    return s.OperationOut(
        retries=op.retries,
        duration=round(max((end - op.created).total_seconds(), 0.0), 3),
        priority=op.priority,
        schedulingID=op.scheduling_id,
        correlationID=op.correlation_id,
        component=op.component,
        state=op.state.value,
        reason=op.reason,
        created=op.created,
        updated=op.updated,
        type=op.type.value,
        blocker=op.blocker,
    )


def config_versions(versions: Sequence[ConfigVersion]) -> list[s.ConfigVersionOut]:
    return [
        s.ConfigVersionOut(
            version=v.version,
            clusterVersion=v.cluster_version,
            kymaVersion=v.kyma_version,
            kymaProfile=v.kyma_profile,
            created=v.created,
            restoredFrom=v.restored_from,
        )
        for v in versions
    ]


def reconciliation_info(item: Reconciliation, ops: Sequence[Operation]) -> s.ReconciliationInfo:
    return s.ReconciliationInfo(
        runtimeID=item.runtime_id,
        schedulingID=item.scheduling_id,
        configVersion=item.config_version,
        created=item.created,
        updated=item.updated,
        status=item.status,
        finished=not item.active,
        operations=[operation(op) for op in ops],
    )
