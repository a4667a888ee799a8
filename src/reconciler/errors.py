"""The exception hierarchy shared by every layer.

Entry points turn these into exit codes and HTTP errors in one place; the messages are written for
the person reading them and always name the object, component or file concerned and the cause.
Nothing here may carry secret material (kubeconfigs, secret values) in its message.

Each error says whether retrying may help (kopf's temporary/permanent errors): `transient`, the
same work may succeed when tried again later (the drivers retry it and report the rest as
final); `KubeApiError.retryable`, the same request may succeed when sent again at once.
"""

from __future__ import annotations


class ReconcilerError(Exception):
    """Base class: an expected failure with a message fit for a user."""

    transient: bool = False
    """Whether the cause may pass by itself, so trying the same work again later may succeed."""


class WaitTimeout(ReconcilerError):
    """A condition did not become true before its deadline."""

    transient = True


class DevClusterError(ReconcilerError):
    """The local test-bed cluster or database could not be built, started or stopped."""


class KubeconfigError(ReconcilerError):
    """A kubeconfig is missing, unreadable or malformed."""


class ClusterUnreachable(ReconcilerError):
    """The cluster's apiserver could not be contacted."""

    transient = True


class KubeApiError(ReconcilerError):
    """The apiserver answered with an error status."""

    RETRYABLE = frozenset({409, 429, 500, 502, 503, 504})
    """A conflict, throttling, or an apiserver briefly failing."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason

    @property
    def retryable(self) -> bool:
        """Whether the same request may succeed when sent again at once."""
        return self.status in self.RETRYABLE


class ChartError(ReconcilerError):
    """A chart cannot be fetched, loaded or rendered."""


class ApplyError(ReconcilerError):
    """The apiserver rejected an object (or a kind is unknown to the cluster)."""


class ReadinessTimeout(ReconcilerError):
    """Objects did not become ready before the deadline; the message says which and why."""

    transient = True


class NotFoundError(ReconcilerError):
    """The cluster, configuration, reconciliation or operation does not exist."""


class ConflictError(ReconcilerError):
    """The request conflicts with the current state (e.g. stopping a running operation)."""


class ForbiddenError(ReconcilerError):
    """The caller is known but may not do this (e.g. a callback without the task's secret)."""


class DatabaseError(ReconcilerError):
    """The configured database cannot be used: an unsupported URL, or no connection or login."""
