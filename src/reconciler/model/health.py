"""A cluster's health: what a person or a dashboard needs to know, apart from the wire status.

The v1 status keeps the original's meaning (a `*_retryable` failure reads `reconciling` to API
clients, and a retry in progress *is* `reconciling`), so it cannot say "this cluster is broken".
Health can: it is derived from the status and from the evidence of the latest finished run
(`RunEvidence`), and it stays what the last run proved until another run proves otherwise:

- `failing` / `unreachable`: the latest finished run failed (unreachable: the root cause could
  not reach the cluster's apiserver); stays so while the next retry runs, while the cluster is
  pending again (a forced run, an enable, a new configuration) and while a delete is retried;
- `healthy`: the latest run succeeded; a re-run of the same configuration stays healthy;
- `progressing`: no run has finished on this configuration yet (a new cluster or configuration,
  a delete under way without a failure so far);
- `disabled`: reconciliation is switched off (the evidence is kept for when it is enabled).
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from reconciler.model.operation import Operation
from reconciler.model.status import ClusterStatus, OperationState

S = ClusterStatus
NOT_RUN = "not run: component "
"""How the bookkeeper names an operation skipped because a component it waits for failed."""
UNREACHABLE_MARKS = (
    "cannot reach the apiserver",
    "apiserver did not answer",
    "watch at ",
)
"""Phrases of the reasons an unreachable apiserver leaves (`kube.client`, `kube.probe`): the
same text whether the operation ran in process or in a component reconciler."""
REASON_MAX = 2048


class Health(enum.StrEnum):
    HEALTHY = "healthy"
    PROGRESSING = "progressing"
    FAILING = "failing"
    UNREACHABLE = "unreachable"
    DISABLED = "disabled"
    DELETED = "deleted"

    @property
    def bad(self) -> bool:
        return self in (Health.FAILING, Health.UNREACHABLE)


SHOWN: tuple[Health, ...] = tuple(h for h in Health if h is not Health.DELETED)
"""The healths of clusters that are listed (deleted ones are not)."""
_FAILED_STATUSES = frozenset(
    {S.ERROR, S.DELETE_ERROR, S.RECONCILE_ERROR_RETRYABLE, S.DELETE_ERROR_RETRYABLE}
)


@dataclass(frozen=True)
class RunEvidence:
    """What the finished runs of a cluster proved, as stored beside its head."""

    result: Health | None = None
    """HEALTHY, FAILING or UNREACHABLE after the latest finished run; None before the first."""
    config_version: int | None = None
    """The configuration version that run worked on."""
    failing_since: dt.datetime | None = None
    consecutive_failures: int = 0
    component: str = ""
    """The root cause: the first component that failed (not the dependants skipped after it)."""
    reason: str = ""
    last_success: dt.datetime | None = None

    def after(self, outcome: RunOutcome, at: dt.datetime) -> RunEvidence:
        """The evidence once a run with `outcome` finished at `at`."""
        if outcome.ok:
            return RunEvidence(
                result=Health.HEALTHY,
                config_version=outcome.config_version,
                last_success=at,
            )
        return replace(
            self,
            result=Health.UNREACHABLE if outcome.unreachable else Health.FAILING,
            config_version=outcome.config_version,
            failing_since=self.failing_since if self.result in _BAD_RESULTS else at,
            consecutive_failures=self.consecutive_failures + 1,
            component=outcome.component,
            reason=outcome.reason[:REASON_MAX],
        )


_BAD_RESULTS = (Health.FAILING, Health.UNREACHABLE)
_FAILED_STATES = (OperationState.ERROR, OperationState.CLIENT_ERROR)


@dataclass(frozen=True)
class RunOutcome:
    """How one finished run ended, reduced to what health needs."""

    ok: bool
    config_version: int
    component: str = ""
    reason: str = ""
    unreachable: bool = False

    @classmethod
    def of(cls, config_version: int, ops: Sequence[Operation]) -> RunOutcome:
        """From a finished run's operations: the root cause is the failed operation of the
        lowest priority (then by name) that was not merely skipped behind another."""
        failed = [op for op in ops if op.state in _FAILED_STATES]
        if not failed:
            return cls(True, config_version)
        causes = [op for op in failed if not op.reason.startswith(NOT_RUN)] or failed
        root = min(causes, key=lambda op: (op.priority, op.component))
        return cls(
            False,
            config_version,
            component=root.component,
            reason=root.reason,
            unreachable=unreachable(op.reason for op in causes),
        )

    @classmethod
    def failed(cls, config_version: int, reason: str, component: str = "") -> RunOutcome:
        """A run that could not even start (e.g. its plan could not be made)."""
        return cls(False, config_version, component, reason, unreachable([reason]))


def unreachable(reasons: Iterable[str]) -> bool:
    """Whether every given failure reason says the apiserver could not be reached."""
    texts = list(reasons)
    return bool(texts) and all(any(mark in text for mark in UNREACHABLE_MARKS) for text in texts)


def health_of(status: ClusterStatus, config_version: int, evidence: RunEvidence) -> Health:
    """The health a cluster in `status` (on `config_version`) has, given its evidence."""
    if status is S.DELETED:
        return Health.DELETED
    if status is S.RECONCILE_DISABLED:
        return Health.DISABLED
    if evidence.result in _BAD_RESULTS:
        assert evidence.result is not None
        return evidence.result
    if status in _FAILED_STATUSES:
        return Health.FAILING  # a failure recorded without evidence (before health existed)
    if status is S.READY:
        return Health.HEALTHY
    if (
        not status.deleting
        and evidence.result is Health.HEALTHY
        and evidence.config_version == config_version
    ):
        return Health.HEALTHY  # a re-run of what already worked
    return Health.PROGRESSING


@dataclass(frozen=True)
class ClusterHealth:
    """A cluster's health with the evidence behind it, as people and dashboards read it."""

    runtime_id: str
    health: Health
    status: ClusterStatus
    evidence: RunEvidence

    @property
    def deleting(self) -> bool:
        return self.status.deleting and self.status is not S.DELETED

    @property
    def summary(self) -> str:
        """One line: `failing since T (3 runs): istio: reason`, `healthy`, ..."""
        ev = self.evidence
        text = self.health.value
        if self.health.bad:
            runs = ev.consecutive_failures
            since = ev.failing_since.strftime("%Y-%m-%d %H:%M:%S UTC") if ev.failing_since else ""
            text += f" since {since} ({runs} failed run{'' if runs == 1 else 's'})"
            if ev.component:
                text += f": {ev.component}"
            if ev.reason:
                text += f": {ev.reason}"
        if self.deleting and self.health.bad:
            text += " (delete cannot finish)"
        return text
