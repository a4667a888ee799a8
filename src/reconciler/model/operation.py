"""Reconciliations (one run over a cluster) and their operations (one per component)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from reconciler.model.status import ClusterStatus, OperationState, OperationType

BLOCKER_MAX = 1024
"""The longest "why not ready" text stored with an operation (one object and its condition)."""


@dataclass(frozen=True)
class PlannedOperation:
    component: str
    namespace: str
    priority: int


@dataclass(frozen=True)
class Operation:
    scheduling_id: str
    correlation_id: str
    runtime_id: str
    config_version: int
    priority: int
    component: str
    namespace: str
    type: OperationType
    state: OperationState
    reason: str
    retries: int
    transient: bool
    worker: str
    created: dt.datetime
    updated: dt.datetime
    blocker: str = ""
    """The latest object that kept the component from being ready, with its condition
    (`deployment kyma-system/x: 0/1 replicas available`); empty when nothing blocks."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.scheduling_id, self.correlation_id)


@dataclass(frozen=True)
class Reconciliation:
    scheduling_id: str
    runtime_id: str
    cluster_version: int
    config_version: int
    type: OperationType
    status: ClusterStatus
    active: bool
    created: dt.datetime
    updated: dt.datetime
