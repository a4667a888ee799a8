"""The rollout's decisions, pure: which wave a Kyma is in, whether a wave passed its gate, and
which version a Kyma gets while a release rolls out. No I/O and no clock of its own (`now` is
passed in), so every process, shard and restart computes the same answer from the same status.

Membership: a Kyma's bucket is a number in [0, 100) from sha256 over the rollout's salt and the
Kyma's namespace and name; a wave takes the Kymas its selector matches and/or whose bucket is
below its (cumulative) percent; a Kyma matching no wave is in the last. The salt is per policy
(default its uid), so the same Kymas go first in every release of the module: the canaries that
got a broken version are the first to get its fix.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from reconciler.model.rollout import (
    BlockedKyma,
    ModuleRolloutSpec,
    OnFailure,
    Phase,
    ReleaseStatus,
    RolloutGate,
    WaveStatus,
)
from reconciler.operator.catalog.resolve import version_key

Health = Literal["ready", "failing", "pending"]
MAX_LISTED = 20
"""Blocked Kymas listed in a release's status."""
ADMITTING = frozenset({Phase.PROGRESSING, Phase.PAUSED, Phase.HALTED, Phase.ABORTED})
"""Phases in which the Kymas of the started waves have the new version."""


def stamp(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_stamp(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def bucket(salt: str, namespace: str, kyma: str) -> float:
    """The Kyma's place in [0, 100), stable for the salt (two decimals)."""
    digest = hashlib.sha256(f"{salt}\x00{namespace}/{kyma}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % 10_000 / 100


def wave_of(
    spec: ModuleRolloutSpec, salt: str, namespace: str, kyma: str, labels: Mapping[str, str]
) -> int:
    """Index of the wave a Kyma belongs to: the first it matches (a wave with neither selector
    nor percent matches everyone left), else the last."""
    place: float | None = None
    for index, wave in enumerate(spec.waves):
        if wave.selector is not None and not wave.selector.selects(labels):
            continue
        if wave.percent is not None:
            if place is None:
                place = bucket(salt, namespace, kyma)
            if place >= wave.percent:
                continue
        return index
    return len(spec.waves) - 1


def allowance(gate: RolloutGate, size: int) -> int:
    """How many of a wave's Kymas may be not Ready when it passes."""
    return max(gate.max_failing, math.floor(size * gate.max_failing_percent / 100))


@dataclass(frozen=True)
class Observed:
    """One Kyma of the population: its wave and how its module is doing on the release."""

    kyma: str
    wave: int
    health: Health
    manifest: str | None = None
    message: str = ""


@dataclass
class Step:
    release: ReleaseStatus
    events: list[tuple[str, str, str]] = field(default_factory=list)
    """(type Normal|Warning, reason, message) for Kubernetes events."""


def adopt(module: str, channel: str, version: str, now: dt.datetime) -> ReleaseStatus:
    """A channel seen for the first time: its version is taken as already everywhere (a policy
    created for a running fleet switches nothing)."""
    at = stamp(now)
    return ReleaseStatus(
        module=module,
        channel=channel,
        version=version,
        phase=Phase.COMPLETE,
        wave_started=at,
        since=at,
        message="version in place when the policy came",
    )


def stable(release: ReleaseStatus) -> str | None:
    """The version the fleet has outside the release's started waves."""
    return release.version if release.phase == Phase.COMPLETE else release.previous


def start(old: ReleaseStatus, version: str, now: dt.datetime) -> Step:
    """A new version on the channel: a new rollout from the first wave."""
    at = stamp(now)
    previous = stable(old)
    release = ReleaseStatus(
        module=old.module,
        channel=old.channel,
        version=version,
        previous=previous,
        phase=Phase.PROGRESSING,
        wave_started=at,
        since=at,
        message=f"rolling out {version} (previous {previous or 'none'})",
    )
    what = f"{old.module} {version} on channel {old.channel}: rollout started"
    return Step(release, [("Normal", "RolloutStarted", what)])


def _counts(spec: ModuleRolloutSpec, observed: Sequence[Observed], upto: int) -> list[WaveStatus]:
    waves = [WaveStatus(name=w.name, size=0) for w in spec.waves]
    for kyma in observed:
        wave = waves[kyma.wave]
        wave.size += 1
        if kyma.wave > upto:
            wave.pending += 1
        elif kyma.health == "ready":
            wave.ready += 1
        elif kyma.health == "failing":
            wave.failing += 1
        else:
            wave.pending += 1
    return waves


def step(
    spec: ModuleRolloutSpec, release: ReleaseStatus, observed: Sequence[Observed], now: dt.datetime
) -> Step:
    """One look at a release: counts refreshed, and the next phase or wave when one is due."""
    r = release.model_copy(deep=True)
    out = Step(r)
    name = f"{r.module} {r.version} on channel {r.channel}"

    def enter(phase: Phase, message: str) -> None:
        if r.phase != phase:
            r.since = stamp(now)
        r.phase, r.message = phase, message

    if r.phase in (Phase.PROGRESSING, Phase.PAUSED):
        if r.version in spec.aborted:
            back = spec.on_failure == OnFailure.ROLLBACK and r.previous is not None
            enter(Phase.ROLLED_BACK if back else Phase.ABORTED, "aborted by hand")
            out.events.append(("Warning", "RolloutAborted", f"{name}: aborted by hand"))
        elif spec.paused:
            if r.phase != Phase.PAUSED:
                enter(Phase.PAUSED, f"paused in wave {spec.waves[r.wave].name}")
                out.events.append(("Normal", "RolloutPaused", f"{name}: paused"))
        elif r.phase == Phase.PAUSED:  # resumed: the wave's clock starts again
            r.wave_started = stamp(now)
            enter(Phase.PROGRESSING, f"resumed in wave {spec.waves[r.wave].name}")
            out.events.append(("Normal", "RolloutResumed", f"{name}: resumed"))
    sizes = [0] * len(spec.waves)
    for kyma in observed:
        sizes[kyma.wave] += 1
    while r.phase == Phase.PROGRESSING:
        wave = spec.waves[r.wave]
        members = [k for k in observed if k.wave == r.wave]
        not_ready = sum(k.health != "ready" for k in members)
        allowed = allowance(spec.gate, len(members))
        elapsed = (now - parse_stamp(r.wave_started)).total_seconds()
        healthy = not_ready <= allowed
        if healthy and (elapsed >= wave.soak_seconds or not members):
            if r.wave == len(spec.waves) - 1:
                enter(Phase.COMPLETE, f"all {len(observed)} Kymas on {r.version}")
                out.events.append(("Normal", "RolloutComplete", f"{name}: complete"))
                break
            r.wave += 1
            r.wave_started = stamp(now)
            r.message = f"wave {spec.waves[r.wave].name} started"
            if sizes[r.wave]:
                out.events.append(
                    ("Normal", "WaveStarted", f"{name}: wave {spec.waves[r.wave].name} started")
                )
            continue  # an empty wave passes at once
        if not healthy and elapsed >= spec.gate.deadline_seconds:
            back = spec.on_failure == OnFailure.ROLLBACK and r.previous is not None
            why = (
                f"wave {wave.name}: {not_ready} of {len(members)} Kymas not Ready on "
                f"{r.version} within {spec.gate.deadline_seconds:g}s (at most {allowed} allowed)"
            )
            enter(Phase.ROLLED_BACK if back else Phase.HALTED, why)
            reason = "RolloutRolledBack" if back else "RolloutHalted"
            out.events.append(("Warning", reason, f"{name}: {why}"))
        break
    upto = r.wave if r.phase != Phase.COMPLETE else len(spec.waves) - 1
    r.waves = _counts(spec, observed, upto)
    r.failing = [
        BlockedKyma(kyma=k.kyma, manifest=k.manifest, message=k.message or k.health)
        for k in observed
        if k.wave <= upto and k.health != "ready"
    ][:MAX_LISTED]
    return out


def next_look(spec: ModuleRolloutSpec, release: ReleaseStatus, now: dt.datetime) -> float | None:
    """Seconds until the release's next due step (its soak or deadline ends); None: nothing is
    due by time alone (a Manifest's change or the spec's still wakes it)."""
    if release.phase != Phase.PROGRESSING:
        return None
    elapsed = (now - parse_stamp(release.wave_started)).total_seconds()
    due = [spec.waves[release.wave].soak_seconds, spec.gate.deadline_seconds]
    ahead = [d - elapsed for d in due if d > elapsed]
    return max(0.05, min(ahead)) if ahead else None


@dataclass(frozen=True)
class Choice:
    version: str
    downgrade: bool = False
    """A rollback: the Kyma goes back to an older version on purpose."""


def choose(release: ReleaseStatus | None, offered: str, wave: int, installed: str | None) -> Choice:
    """The version a Kyma in `wave` gets of a module whose channel offers `offered`, under a
    policy whose status for that channel is `release` (None: not seen yet)."""
    if release is not None and release.version == offered:
        admitted = wave <= release.wave
        if release.phase == Phase.COMPLETE or (admitted and release.phase in ADMITTING):
            return Choice(offered)
        if admitted and release.phase == Phase.ROLLED_BACK and release.previous:
            down = installed is not None and version_key(release.previous) < version_key(installed)
            return Choice(release.previous, downgrade=down)
    if installed:
        return Choice(installed)  # not its turn (or the controller has not seen the release)
    fallback = None if release is None else stable(release) or release.previous
    return Choice(fallback or offered)
