"""A task for the component reconciler core, and the progress it reports.

A task is everything one component needs to be reconciled or deleted on one cluster, its source
included: a Helm chart, a raw manifest or objects handed over whole, each a small typed value
that the chart provider (`core/charts.py`) dispatches on. Progress events end in `success` or
`error` (unrecoverable); `failed` means "failed this attempt, retrying".
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.model.kube_object import KubeObject


class TaskType(enum.StrEnum):
    RECONCILE = "reconcile"
    DELETE = "delete"


class ProgressState(enum.StrEnum):
    RUNNING = "running"
    FAILED = "failed"
    SUCCESS = "success"
    ERROR = "error"

    @property
    def final(self) -> bool:
        return self in (ProgressState.SUCCESS, ProgressState.ERROR)


@dataclass(frozen=True)
class ChartRef:
    """A Helm chart: a local directory, an http(s) URL of a `.tgz`, or `oci://registry/repo`
    (`:tag` or `@sha256:` pinned). For the `CRDs` pseudo-component: the workspace root whose
    CRD files it applies ("" for none)."""

    link: str


@dataclass(frozen=True)
class RawManifest:
    """One YAML document stream applied as written (lifecycle-manager's `rawManifest`): a local
    path (`file://` or plain), an http(s) URL, or an OCI artifact's layer (`oci://...`)."""

    link: str


@dataclass(frozen=True)
class GivenObjects:
    """Objects handed over whole, already checked by whoever gives them (a SyncResource's):
    nothing is fetched or rendered."""

    objects: tuple[KubeObject, ...]


Source = ChartRef | RawManifest | GivenObjects


@dataclass(frozen=True)
class Stamp:
    """Labels and annotations put on every object a task applies (besides the core's own): a
    driver's marks, e.g. the lifecycle manager's on a module's objects."""

    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.labels or self.annotations)

    def key(self) -> list[list[tuple[str, str]]]:
        """A JSON-able form for digests (changes whenever the stamp does)."""
        return [sorted(self.labels.items()), sorted(self.annotations.items())]


@dataclass(frozen=True)
class Task:
    component: str
    namespace: str
    version: str
    source: Source
    """Where the component's objects come from."""
    type: TaskType = TaskType.RECONCILE
    profile: str | None = None
    configuration: dict[str, Any] = field(default_factory=dict)
    """Overrides for this component, global ones already merged (flat or nested keys)."""
    include_crds: bool = True
    """Apply the chart's `crds/` too; off when the CRDs pseudo-component owns them."""
    crd_sources: tuple[str, ...] = ()
    """CRDs pseudo-component only: chart sources whose `crds/` directories it applies."""
    correlation_id: str = ""
    components_ready: tuple[str, ...] = ()
    timeout: float = 300.0
    wait: bool = True
    """Wait until workloads are ready (off for benchmarks against `helm` without --wait)."""
    force: bool = False
    """Render and apply every object even when the inputs did not change (no fast path)."""
    secret_keys: tuple[str, ...] = ()
    """Configuration keys whose values are secret: scrubbed from every error and log line."""
    regenerate: str = ""
    """A token: when it differs from the one the component last ran with, values the chart
    generates (certificates, passwords) are applied as rendered instead of kept as they are."""
    stamp: Stamp = Stamp()
    """Labels and annotations for every object of the component."""


@dataclass(frozen=True)
class ProgressEvent:
    component: str
    state: ProgressState
    message: str = ""
    phase: str = ""
    """What the component is doing now: render, apply, wait, prune, delete, ..."""
    blocker: str = ""
    """While waiting for readiness: the object that is not ready yet and its condition
    (`deployment kyma-system/x: 0/1 replicas available`), or the workload that failed."""
