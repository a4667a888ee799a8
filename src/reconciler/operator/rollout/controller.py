"""The ModuleRollout controller: for every module and channel its policy covers, follow the
channel's version through the waves and write where it is into the status (queue key
`ModuleRollout`).

A channel seen for the first time is taken as rolled out (a new policy switches nothing); a new
version on it starts a rollout from the first wave (`plan.start`), whose next wave starts once the
current one soaked and passed its gate (`plan.step`). The Kymas read the status (through the
index) and take the new version only when their wave is admitted, so the state of a rollout is
its status: a restarted or another process continues the same wave. Each change of phase or wave
is a Kubernetes event on the ModuleRollout and is in the metrics.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from reconciler.errors import ReconcilerError
from reconciler.model.kube_object import Body
from reconciler.model.lifecycle import MODULE_NAME, ModuleReleaseMetaSpec, State
from reconciler.model.rollout import ModuleRolloutSpec, Phase, ReleaseStatus
from reconciler.observability.logging import get_logger
from reconciler.operator.clusters.control import ControlPlane
from reconciler.operator.clusters.fleet import FleetIndex
from reconciler.operator.metrics import OperatorMetrics
from reconciler.operator.rollout import plan
from reconciler.operator.rollout.index import KymaInfo, Policy, RolloutIndex, parse
from reconciler.operator.settings import OperatorSettings
from reconciler.util.clock import utcnow

STOPS = {
    "RolloutHalted": str(Phase.HALTED),
    "RolloutRolledBack": str(Phase.ROLLED_BACK),
    "RolloutAborted": str(Phase.ABORTED),
}
"""Event reasons of a stopped release -> the phase label of `rollout_stops`."""


def _health(
    manifests: list[Body], module: str, version: str
) -> tuple[plan.Health, str | None, str]:
    """How a Kyma's module is doing on `version`: its Manifest's state, and what blocks it."""
    found = next(
        (m for m in manifests if m["metadata"].get("labels", {}).get(MODULE_NAME) == module), None
    )
    if found is None:
        return "pending", None, "no Manifest yet"
    name = str(found["metadata"]["name"])
    have = str((found.get("spec") or {}).get("version") or "")
    if have != version:
        return "pending", name, f"on {have or 'no version'}"
    status = found.get("status") or {}
    state = str(status.get("state") or State.PROCESSING)
    message = str((status.get("lastOperation") or {}).get("operation") or state)
    if state == State.READY:
        return "ready", name, ""
    if state in (State.ERROR, State.WARNING):
        return "failing", name, f"{state}: {message}"
    return "pending", name, f"{state}: {message}"


class RolloutController:
    def __init__(
        self,
        control: ControlPlane,
        settings: OperatorSettings,
        index: RolloutIndex,
        fleet: FleetIndex,
        metrics: OperatorMetrics,
    ) -> None:
        self.control, self.settings, self.index = control, settings, index
        self.fleet, self.metrics = fleet, metrics

    async def handle(self, namespace: str, name: str) -> float | None:
        body = await self.control.get("ModuleRollout", namespace, name)
        if body is None:
            self.metrics.forget_rollout(namespace, name)
            return None
        policy = parse(body)
        log = get_logger(rollout=name, namespace=namespace)
        if policy.spec is None:
            await self._write(body, [], f"invalid: {policy.error}")
            return None
        try:
            if namespace not in self.index.listed:
                await self._list_population(namespace)
            metas = await self._metas(namespace)
        except ReconcilerError as exc:
            log.warning("rollout cannot read the catalog or the Kymas", error=str(exc))
            return self.settings.error_interval
        now = utcnow()
        releases: list[ReleaseStatus] = []
        due: list[float] = []
        events: list[tuple[str, str, str, str]] = []  # (module, type, reason, message)
        kymas = self.index.kymas(namespace)
        for module in self._modules(policy, metas):
            for channel, offered in metas[module].items():
                old = policy.releases.get((module, channel))
                if old is None:
                    release = plan.adopt(module, channel, offered, now)
                elif old.version != offered:
                    started = plan.start(old, offered, now)
                    release = started.release
                    events += [(module, *e) for e in started.events]
                else:
                    release = old
                observed = self._observe(policy.spec, policy, kymas, module, channel, release)
                stepped = plan.step(policy.spec, release, observed, now)
                events += [(module, *e) for e in stepped.events]
                releases.append(stepped.release)
                wait = plan.next_look(policy.spec, stepped.release, now)
                if wait is not None:
                    due.append(wait)
                self._measure(policy, stepped.release)
        await self._write(body, releases, "")
        for module, kind, reason, message in events:
            log.info("rollout", reason=reason, message=message)
            await self._event(body, kind, reason, message)
            if reason in STOPS:
                self.metrics.rollout_stops.labels(namespace, module, STOPS[reason]).inc()
        return min(due) if due else None

    async def _list_population(self, namespace: str) -> None:
        """The namespace's Kymas and Manifests, listed once before the first judgement: a
        process that just started may not have them all from its watches yet, and a release
        judged then would see empty waves (passed at once) and no Manifest Ready (halted at a
        deadline already passed)."""
        kymas = await self.control.list("Kyma", namespace)
        manifests = await self.control.list("Manifest", namespace)
        for kyma in kymas:
            self.index.listed_kyma(kyma)
        for manifest in manifests:
            self.fleet.listed_manifest(manifest)
        self.index.listed.add(namespace)

    async def _metas(self, namespace: str) -> dict[str, dict[str, str]]:
        """module -> channel -> version, from the ModuleReleaseMetas."""
        items = self.fleet.catalog(namespace, "ModuleReleaseMeta")
        if items is None:
            items = await self.control.list("ModuleReleaseMeta", namespace)
        out: dict[str, dict[str, str]] = {}
        for item in items:
            try:
                spec = ModuleReleaseMetaSpec.model_validate(item.get("spec") or {})
            except ValidationError:
                continue  # the Kyma controller reports it
            out[spec.module_name] = {c.channel: c.version for c in spec.channels or []}
        return out

    def _modules(self, policy: Policy, metas: dict[str, dict[str, str]]) -> list[str]:
        """The modules the policy decides for: its own, or (the default) every module of the
        catalog that has no policy of its own."""
        if policy.module:
            return [policy.module] if policy.module in metas else []
        default = self.index.policy_for(policy.namespace, "\x00")  # the namespace's default
        if default is not None and default.name != policy.name:
            return []  # another default comes first by name: this one is not used
        own = {p.module for p in self.index.policies(policy.namespace) if p.module}
        return sorted(m for m in metas if m not in own)

    def _observe(
        self,
        spec: ModuleRolloutSpec,
        policy: Policy,
        kymas: list[KymaInfo],
        module: str,
        channel: str,
        release: ReleaseStatus,
    ) -> list[plan.Observed]:
        observed = []
        for kyma in kymas:
            if kyma.modules.get(module) != channel:
                continue
            wave = plan.wave_of(spec, policy.salt, policy.namespace, kyma.name, kyma.labels)
            manifests = self.fleet.manifests(policy.namespace, kyma.name)
            health, manifest, message = _health(manifests, module, release.version)
            observed.append(plan.Observed(kyma.name, wave, health, manifest, message))
        return observed

    def _measure(self, policy: Policy, release: ReleaseStatus) -> None:
        counts = {"ready": 0, "failing": 0, "pending": 0}
        for wave in release.waves:
            counts["ready"] += wave.ready
            counts["failing"] += wave.failing
            counts["pending"] += wave.pending
        key = (policy.namespace, policy.name, release.module, release.channel)
        self.metrics.set_rollout(key, str(release.phase), release.wave, counts)

    async def _write(self, body: Body, releases: list[ReleaseStatus], error: str) -> None:
        status: dict[str, Any] = {"releases": [r.dump() for r in releases]}
        if error:
            status["message"] = error
        generation = body["metadata"].get("generation")
        if generation is not None:
            status["observedGeneration"] = generation
        await self.control.set_status(body, status)

    async def _event(self, body: Body, kind: str, reason: str, message: str) -> None:
        """A Kubernetes event on the ModuleRollout (best effort: a failure is logged)."""
        meta = body["metadata"]
        stamp = utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": body.get("apiVersion"),
                "kind": "ModuleRollout",
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta.get("uid"),
            },
            "reason": reason,
            "message": message[:1024],
            "type": kind,
            "source": {"component": "reconciler-operator"},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        path = f"/api/v1/namespaces/{meta['namespace']}/events"
        try:
            await self.control.cluster.client.request("POST", path, body=event)
        except ReconcilerError as exc:
            get_logger(rollout=meta["name"]).warning("event not recorded", error=str(exc))
