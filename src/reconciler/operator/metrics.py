"""Prometheus metrics of the operator: Kyma and module states, reconcile durations, requeue
reasons, the remote-client cache and the work queue. State series are replaced, not added to:
one series per Kyma (and module) carries its current state."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from reconciler.observability.metrics import process_registry

DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


class OperatorMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or process_registry("operator")
        r = self.registry
        self.kyma_state = Gauge(
            "reconciler_operator_kyma_state",
            "1 for the current state of each Kyma (label state).",
            ["namespace", "kyma", "state"],
            registry=r,
        )
        self.module_state = Gauge(
            "reconciler_operator_module_state",
            "1 for the current state of each module of each Kyma (label state).",
            ["namespace", "kyma", "module", "state"],
            registry=r,
        )
        self.duration = Histogram(
            "reconciler_operator_reconcile_duration_seconds",
            "Time one reconcile of a Kyma or Manifest took.",
            ["kind", "result"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.requeues = Counter(
            "reconciler_operator_requeues",
            "Reconciles by the reason of their next requeue (success, busy, warning, error).",
            ["kind", "reason"],
            registry=r,
        )
        self.remote_clients = Gauge(
            "reconciler_operator_remote_clients", "Cached remote-cluster connections.", registry=r
        )
        self.queue_depth = Gauge(
            "reconciler_operator_queue_depth", "Keys waiting in the work queue.", registry=r
        )
        self.rollout_phase = Gauge(
            "reconciler_operator_rollout_phase",
            "1 for the current phase of each release under a ModuleRollout (label phase).",
            ["namespace", "rollout", "module", "channel", "phase"],
            registry=r,
        )
        self.rollout_wave = Gauge(
            "reconciler_operator_rollout_wave",
            "Index of the current wave of each release under a ModuleRollout (0: the first).",
            ["namespace", "rollout", "module", "channel"],
            registry=r,
        )
        self.rollout_kymas = Gauge(
            "reconciler_operator_rollout_kymas",
            "Kymas of each release by health on the new version (ready, failing, pending).",
            ["namespace", "rollout", "module", "channel", "health"],
            registry=r,
        )
        self.rollout_stops = Counter(
            "reconciler_operator_rollout_stops",
            "Releases stopped by a failed health gate or by hand (label phase).",
            ["namespace", "module", "phase"],
            registry=r,
        )
        self._kymas: dict[tuple[str, str], str] = {}
        self._phases: dict[tuple[str, str, str, str], str] = {}
        self._modules: dict[tuple[str, str], dict[str, str]] = {}

    def watch_sizes(self, remote_clients: Callable[[], int], queue: Callable[[], int]) -> None:
        self.remote_clients.set_function(lambda: float(remote_clients()))
        self.queue_depth.set_function(lambda: float(queue()))

    def set_kyma(self, namespace: str, kyma: str, state: str, modules: dict[str, str]) -> None:
        key = (namespace, kyma)
        old = self._kymas.get(key)
        if old is not None and old != state:
            self.kyma_state.remove(namespace, kyma, old)
        self.kyma_state.labels(namespace, kyma, state).set(1)
        self._kymas[key] = state
        before = self._modules.get(key, {})
        for module, old_state in before.items():
            if modules.get(module) != old_state:
                self.module_state.remove(namespace, kyma, module, old_state)
        for module, module_state in modules.items():
            self.module_state.labels(namespace, kyma, module, module_state).set(1)
        self._modules[key] = dict(modules)

    def forget_kyma(self, namespace: str, kyma: str) -> None:
        self.set_kyma(namespace, kyma, "", {})
        self.kyma_state.remove(namespace, kyma, "")
        self._kymas.pop((namespace, kyma), None)
        self._modules.pop((namespace, kyma), None)

    def set_rollout(
        self,
        release: tuple[str, str, str, str],
        phase: str,
        wave: int,
        health: dict[str, int],
    ) -> None:
        """One release's series; `release` is (namespace, rollout, module, channel)."""
        old = self._phases.get(release)
        if old is not None and old != phase:
            self.rollout_phase.remove(*release, old)
        self.rollout_phase.labels(*release, phase).set(1)
        self._phases[release] = phase
        self.rollout_wave.labels(*release).set(wave)
        for name, count in health.items():
            self.rollout_kymas.labels(*release, name).set(count)

    def forget_rollout(self, namespace: str, rollout: str) -> None:
        for release in [r for r in self._phases if r[:2] == (namespace, rollout)]:
            self.rollout_phase.remove(*release, self._phases.pop(release))
            self.rollout_wave.remove(*release)
            for name in ("ready", "failing", "pending"):
                self.rollout_kymas.remove(*release, name)
