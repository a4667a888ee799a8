"""ModuleRollout: how a new module version reaches the fleet, in waves with a health gate.

Ours, not the lifecycle manager's (it has no such kind), in its group and version like
`ModuleConfig`/`SyncResource`. One per module (`spec.module`) and optionally one default per
namespace (`spec.module` empty): a module without a policy of either kind behaves as before
(every Kyma on a channel takes its new version at once). The decisions are
`operator/rollout/plan.py`; the controller writing the status is `operator/rollout/controller.py`.
"""

from __future__ import annotations

import enum

from pydantic import Field

from reconciler.model.lifecycle import Kind, LabelSelector
from reconciler.model.resource import ResourceModel


class OnFailure(enum.StrEnum):
    HALT = "Halt"
    ROLLBACK = "Rollback"


class Phase(enum.StrEnum):
    PROGRESSING = "Progressing"
    PAUSED = "Paused"
    HALTED = "Halted"
    ROLLED_BACK = "RolledBack"
    ABORTED = "Aborted"
    COMPLETE = "Complete"


class RolloutWave(ResourceModel):
    """One wave: the Kymas its `selector` matches and/or whose bucket (0-100, a stable hash of
    the Kyma and the rollout's salt) is below `percent`; with both, those matching both. A Kyma
    belongs to the first wave it matches; one matching none to the last wave."""

    name: str = Field(min_length=1, max_length=63)
    percent: float | None = Field(default=None, ge=0, le=100)
    """Cumulative share of the fleet (a later wave's percent includes the earlier ones')."""
    selector: LabelSelector | None = None
    """Kyma labels (matchLabels, matchExpressions: In, NotIn, Exists, DoesNotExist)."""
    soak_seconds: float = Field(default=0, ge=0)
    """Minimum time from the wave's start until the next wave may start."""


class RolloutGate(ResourceModel):
    """A wave passes when, after its soak, at most the allowance of its Kymas is not Ready on
    the new version; it fails when that is still so `deadlineSeconds` after its start. The
    allowance is the larger of `maxFailing` and `maxFailingPercent` of the wave's size."""

    deadline_seconds: float = Field(default=600, ge=0.01)
    max_failing: int = Field(default=0, ge=0)
    max_failing_percent: float = Field(default=0, ge=0, le=100)


class ModuleRolloutSpec(ResourceModel):
    module: str = ""
    """The module this policy is for; empty: the namespace's default for modules without one."""
    waves: list[RolloutWave] = Field(min_length=1, max_length=20)
    gate: RolloutGate = Field(default_factory=RolloutGate)
    on_failure: OnFailure = OnFailure.HALT
    """On a failed gate: `Halt` (Kymas on the new version keep it, no other switches) or
    `Rollback` (they go back to the previous version)."""
    paused: bool = False
    """No wave starts while set; Kymas already admitted keep the new version."""
    aborted: list[str] = Field(default_factory=list)
    """Versions stopped by hand (`reconciler operator rollout abort`): handled as a failed gate."""
    salt: str = ""
    """Mixed into the wave membership hash (empty: the resource's uid)."""


class WaveStatus(ResourceModel):
    name: str
    size: int
    ready: int = 0
    failing: int = 0
    pending: int = 0


class BlockedKyma(ResourceModel):
    kyma: str
    message: str
    manifest: str | None = None
    """The Manifest that blocks it (its state and message are the reason)."""


class ReleaseStatus(ResourceModel):
    """One version of one module on one channel, on its way through the waves."""

    module: str
    channel: str
    version: str
    previous: str | None = None
    """The version the fleet had before (what held Kymas install, and rollback returns to)."""
    phase: Phase
    wave: int = 0
    """Index of the current wave: Kymas of waves up to it may take `version`."""
    wave_started: str
    """When the current wave started (RFC 3339)."""
    since: str
    """When `phase` last changed."""
    message: str = ""
    waves: list[WaveStatus] = Field(default_factory=list)
    failing: list[BlockedKyma] = Field(default_factory=list)
    """Kymas of the started waves not Ready on `version` (the first 20)."""


class ModuleRolloutStatus(ResourceModel):
    releases: list[ReleaseStatus] = Field(default_factory=list)
    message: str | None = None
    """Why the policy is not applied (an invalid spec)."""
    observed_generation: int | None = None


class ModuleRolloutKind(Kind):
    kind, plural, spec, status = (
        "ModuleRollout",
        "modulerollouts",
        ModuleRolloutSpec,
        ModuleRolloutStatus,
    )
    short_names = ("mro",)
