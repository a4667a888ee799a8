"""Cluster statuses and operation states as data: enums plus the transitions each allows.

One function applies a cluster status transition; anything not in the table is refused with a
message naming both statuses. Operation states are compare-and-set in the store; final states
never change. `*_retryable` statuses are reported to API clients as `reconciling`/`deleting`.
"""

from __future__ import annotations

import enum

from reconciler.errors import ReconcilerError


class ClusterStatus(enum.StrEnum):
    RECONCILE_PENDING = "reconcile_pending"
    RECONCILE_DISABLED = "reconcile_disabled"
    RECONCILING = "reconciling"
    READY = "ready"
    ERROR = "error"
    RECONCILE_ERROR_RETRYABLE = "reconcile_error_retryable"
    DELETE_PENDING = "delete_pending"
    DELETING = "deleting"
    DELETE_ERROR = "delete_error"
    DELETE_ERROR_RETRYABLE = "delete_error_retryable"
    DELETED = "deleted"

    @property
    def public(self) -> ClusterStatus:
        """What API clients see: retryable errors are still work in progress to them."""
        return _PUBLIC.get(self, self)

    @property
    def deleting(self) -> bool:
        return self in _DELETE_SIDE


_PUBLIC = {
    ClusterStatus.RECONCILE_ERROR_RETRYABLE: ClusterStatus.RECONCILING,
    ClusterStatus.DELETE_ERROR_RETRYABLE: ClusterStatus.DELETING,
}
_DELETE_SIDE = {
    ClusterStatus.DELETE_PENDING,
    ClusterStatus.DELETING,
    ClusterStatus.DELETE_ERROR,
    ClusterStatus.DELETE_ERROR_RETRYABLE,
    ClusterStatus.DELETED,
}

S = ClusterStatus
_LIVE: frozenset[ClusterStatus] = frozenset(S) - _DELETE_SIDE
CLUSTER_TRANSITIONS: dict[ClusterStatus, frozenset[ClusterStatus]] = {
    # target: the statuses it may be reached from
    S.RECONCILE_PENDING: _LIVE | {S.DELETED},  # new config, forced run, re-created cluster
    S.RECONCILE_DISABLED: _LIVE,
    S.RECONCILING: frozenset({S.RECONCILE_PENDING, S.READY, S.RECONCILE_ERROR_RETRYABLE}),
    S.READY: frozenset({S.RECONCILING, S.RECONCILE_DISABLED}),
    S.ERROR: frozenset({S.RECONCILING}),
    S.RECONCILE_ERROR_RETRYABLE: frozenset({S.RECONCILING}),
    S.DELETE_PENDING: frozenset(S) - {S.DELETED, S.DELETING},
    S.DELETING: frozenset({S.DELETE_PENDING, S.DELETE_ERROR_RETRYABLE}),
    S.DELETE_ERROR: frozenset({S.DELETING}),
    S.DELETE_ERROR_RETRYABLE: frozenset({S.DELETING}),
    S.DELETED: frozenset({S.DELETING}),
}


class StatusTransitionError(ReconcilerError):
    """A status change the state machine does not allow."""


def transition(current: ClusterStatus | None, target: ClusterStatus) -> ClusterStatus:
    """Return `target` when `current` may move there; raise StatusTransitionError otherwise."""
    if current is None or current in CLUSTER_TRANSITIONS[target]:
        return target
    raise StatusTransitionError(f"cluster status cannot change from {current} to {target}")


class OperationState(enum.StrEnum):
    NEW = "new"
    IN_PROGRESS = "in_progress"
    DONE = "done"
    CLIENT_ERROR = "client_error"
    ERROR = "error"
    FAILED = "failed"
    ORPHAN = "orphan"

    @property
    def final(self) -> bool:
        return self in (OperationState.DONE, OperationState.ERROR, OperationState.CLIENT_ERROR)


CLAIMABLE = (OperationState.NEW, OperationState.ORPHAN, OperationState.FAILED)


class OperationType(enum.StrEnum):
    RECONCILE = "reconcile"
    DELETE = "delete"
