"""What the operator knows of its rollout policies (ModuleRollouts, status included) and of the
Kymas they choose among, kept from kopf's events (primed by one LIST before the watches, so no
Kyma is reconciled before its module's policy is known).

The Kyma controller asks it, per Kyma, which version each module gets (`for_kyma`); the rollout
controller reads the population from it. Like the fleet index it may lag an event: a lagging
status shows an earlier wave or the previous release, which only holds a Kyma back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from reconciler.model.kube_object import Body
from reconciler.model.lifecycle import KymaSpec
from reconciler.model.rollout import ModuleRolloutSpec, ModuleRolloutStatus, ReleaseStatus
from reconciler.operator.rollout.plan import choose, wave_of

ReleaseKey = tuple[str, str]
"""(module, channel)."""


@dataclass
class Policy:
    namespace: str
    name: str
    uid: str
    spec: ModuleRolloutSpec | None
    """None: the spec is invalid (the controller says why in the status); every Kyma holds."""
    module: str = ""
    """The module it is for ("": the namespace's default), read even from an invalid spec."""
    error: str = ""
    releases: dict[ReleaseKey, ReleaseStatus] = field(default_factory=dict)

    @property
    def salt(self) -> str:
        return (self.spec.salt if self.spec is not None else "") or self.uid

    def decisions(self) -> tuple[Any, ...]:
        """What the Kymas' versions depend on: a change of it requeues the namespace's Kymas."""
        spec = None if self.spec is None else self.spec.model_dump(exclude={"paused", "aborted"})
        phases = sorted(
            (k, r.version, r.previous, str(r.phase), r.wave) for k, r in self.releases.items()
        )
        return (repr(spec), tuple(phases))


def parse(body: Body) -> Policy:
    meta = body["metadata"]
    try:
        spec: ModuleRolloutSpec | None = ModuleRolloutSpec.model_validate(body.get("spec") or {})
        error = ""
    except ValidationError as exc:
        problem = exc.errors(include_input=False)[0]
        where = ".".join(str(p) for p in problem["loc"])
        spec, error = None, f"spec.{where}: {problem['msg']}"
    try:
        status = ModuleRolloutStatus.model_validate(body.get("status") or {})
    except ValidationError:
        status = ModuleRolloutStatus()  # the controller writes it anew
    return Policy(
        namespace=str(meta["namespace"]),
        name=str(meta["name"]),
        uid=str(meta.get("uid") or ""),
        spec=spec,
        module=str((body.get("spec") or {}).get("module") or ""),
        error=error,
        releases={(r.module, r.channel): r for r in status.releases},
    )


@dataclass(frozen=True)
class KymaInfo:
    name: str
    labels: Mapping[str, str]
    modules: Mapping[str, str]
    """Managed module -> its channel (its own or the Kyma's)."""


def kyma_info(body: Body) -> KymaInfo | None:
    meta = body["metadata"]
    try:
        spec = KymaSpec.model_validate(body.get("spec") or {})
    except ValidationError:
        return None
    modules = {m.name: m.channel or spec.channel for m in spec.modules or [] if m.managed}
    return KymaInfo(str(meta["name"]), dict(meta.get("labels") or {}), modules)


class RolloutIndex:
    def __init__(self) -> None:
        self._policies: dict[str, dict[str, Policy]] = {}
        self._kymas: dict[str, dict[str, KymaInfo]] = {}
        self.listed: set[str] = set()
        """Namespaces whose Kymas (and Manifests) were listed once (`RolloutController`): before
        that, the watches may not have delivered them all yet."""

    def prime(self, items: list[Body]) -> None:
        for body in items:
            self.observe(body)

    def observe(self, body: Body, *, deleted: bool = False) -> set[str] | None:
        """Record a ModuleRollout event; the Kymas whose versions may have changed (None:
        every Kyma of the namespace; empty: none)."""
        meta = body["metadata"]
        namespace, name = str(meta["namespace"]), str(meta["name"])
        known = self._policies.setdefault(namespace, {})
        before = known.pop(name, None)
        if not deleted:
            known[name] = parse(body)
        after = known.get(name)
        if (before.decisions() if before else None) == (after.decisions() if after else None):
            return set()
        return self.affected(before, after)

    def observe_kyma(self, body: Body, *, deleted: bool = False) -> None:
        meta = body["metadata"]
        namespace, name = str(meta["namespace"]), str(meta["name"])
        kymas = self._kymas.setdefault(namespace, {})
        info = None if deleted else kyma_info(body)
        if info is None:
            kymas.pop(name, None)
        else:
            kymas[name] = info

    def listed_kyma(self, body: Body) -> None:
        """A Kyma from a listing of our own: recorded unless a watch event already was."""
        meta = body["metadata"]
        if str(meta["name"]) not in self._kymas.get(str(meta["namespace"]), {}):
            self.observe_kyma(body)

    def affected(self, before: Policy | None, after: Policy | None) -> set[str] | None:
        """The Kymas whose versions a policy's change may move (None: every Kyma of the
        namespace): a release's Kymas up to its wave, where that release moved; all when the
        policy itself came, went or changed its waves."""
        if before is None or after is None or before.spec is None or after.spec is None:
            return None
        if before.spec.model_dump(exclude={"paused", "aborted", "gate", "on_failure"}) != (
            after.spec.model_dump(exclude={"paused", "aborted", "gate", "on_failure"})
        ):
            return None
        moved: set[str] = set()
        for key, release in after.releases.items():
            old = before.releases.get(key)
            same = old is not None and (old.version, old.previous, old.phase, old.wave) == (
                release.version,
                release.previous,
                release.phase,
                release.wave,
            )
            if same:
                continue
            last = len(after.spec.waves) if release.phase == "Complete" else release.wave
            module, channel = key
            for kyma in self.kymas(after.namespace):
                if kyma.modules.get(module) != channel:
                    continue
                wave = wave_of(after.spec, after.salt, after.namespace, kyma.name, kyma.labels)
                if wave <= last:
                    moved.add(kyma.name)
        return moved

    def policies(self, namespace: str) -> list[Policy]:
        return [p for _, p in sorted(self._policies.get(namespace, {}).items())]

    def policy(self, namespace: str, name: str) -> Policy | None:
        return self._policies.get(namespace, {}).get(name)

    def policy_for(self, namespace: str, module: str) -> Policy | None:
        """The module's own policy, else the namespace's default (the first by name)."""
        policies = self.policies(namespace)
        own = next((p for p in policies if p.module == module), None)
        return own or next((p for p in policies if not p.module), None)

    def kymas(self, namespace: str) -> list[KymaInfo]:
        return list(self._kymas.get(namespace, {}).values())

    def for_kyma(
        self, namespace: str, kyma: str, labels: Mapping[str, str], installed: Mapping[str, str]
    ) -> KymaVersions:
        return KymaVersions(self, namespace, kyma, labels, installed)


class KymaVersions:
    """The version each module of one Kyma gets (`catalog/resolve.py`'s `choose`), and which of
    them are rollbacks (a downgrade the Kyma controller then allows)."""

    def __init__(
        self,
        index: RolloutIndex,
        namespace: str,
        kyma: str,
        labels: Mapping[str, str],
        installed: Mapping[str, str],
    ) -> None:
        self.index, self.namespace, self.kyma = index, namespace, kyma
        self.labels, self.installed = labels, installed
        self.rollback: set[str] = set()

    def __call__(self, module: str, channel: str, offered: str) -> str:
        policy = self.index.policy_for(self.namespace, module)
        if policy is None:
            return offered  # no policy: every Kyma takes the channel's version at once
        installed = self.installed.get(module) or None
        if policy.spec is None:
            return installed or offered  # an invalid policy holds every Kyma
        wave = wave_of(policy.spec, policy.salt, self.namespace, self.kyma, self.labels)
        chosen = choose(policy.releases.get((module, channel)), offered, wave, installed)
        if chosen.downgrade:
            self.rollback.add(module)
        return chosen.version
