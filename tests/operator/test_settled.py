"""Settled Kymas and Manifests skip their periodic check while their watches would have
reported a change (`operator/settled.py`); drift is still reverted at once, and a watch that
ended brings the check back."""

from __future__ import annotations

import asyncio
from pathlib import Path

from reconciler.charts.sources import ChartCache
from reconciler.kube.cluster import Cluster
from reconciler.operator.clusters.install import install_crds
from reconciler.operator.runtime.wiring import Operator
from reconciler.operator.settings import OperatorSettings
from reconciler.operator.settled import SettledRuns
from tests.conftest import ClusterFactory, KubeTarget
from tests.operator import modules
from tests.operator.conftest import LOCAL_SOURCES, World
from tests.operator.running import reconciles, running

SETTINGS = OperatorSettings(
    **LOCAL_SOURCES,  # type: ignore[arg-type]
    success_interval=0.3,
    verify_interval=600,
    busy_interval=0.3,
    error_interval=0.5,
    error_max_interval=2,
    timeout=60,
)


KINDS = ("Kyma", "Manifest", "RemoteKyma")


def test_a_settled_key_is_skipped_only_while_covered_and_young() -> None:
    settled = SettledRuns(verify_interval=10)
    assert not settled.skip("never-run", 0)
    settled.settle("kyma", 100.0)
    assert settled.skip("kyma", 105.0)
    assert not settled.skip("kyma", 110.0)  # the safety net: checked again
    gap = {"since": 103.0}
    settled.settle("manifest", 100.0, lambda since: gap["since"] <= since)
    assert not settled.skip("manifest", 101.0)  # the watch opened after the run started
    gap["since"] = 99.0
    assert settled.skip("manifest", 101.0)
    settled.forget("manifest")
    assert not settled.skip("manifest", 101.0)
    assert len(settled) == 1


def _skipped(operator: Operator, kind: str) -> float:
    sample = operator.metrics.registry.get_sample_value(
        "reconciler_operator_requeues_total", {"kind": kind, "reason": "settled"}
    )
    return float(sample or 0.0)


async def test_a_ready_fleet_idles_without_checks_yet_drift_and_watch_gaps_are_handled(
    kube_cluster: KubeTarget, namespace: str, cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    remote_target = await cluster_factory(controller_manager=False)
    async with (
        await Cluster.connect(kube_cluster.kubeconfig) as control,
        await Cluster.connect(remote_target.kubeconfig) as remote,
    ):
        await install_crds(control)
        operator = Operator(control, ChartCache(tmp_path / "cache"), SETTINGS)
        world = World(control, remote, remote_target.kubeconfig, namespace, tmp_path / "charts")
        async with running(operator, kube_cluster.kubeconfig, namespace):
            await world.catalog()
            await control.apply(
                modules.kubeconfig_secret(namespace, "k1", remote_target.kubeconfig)
            )
            await control.apply(
                modules.kyma(namespace, "k1", "regular", [{"name": "beta", "managed": True}])
            )
            await world.kyma_state("k1", "Ready")

            async def skipping() -> bool:
                return all(_skipped(operator, kind) >= 3 for kind in KINDS)

            await world.until(skipping, "settled checks skipped", timeout=30)
            # settled: many success intervals pass without a single run
            runs = [reconciles(operator, kind) for kind in KINDS]
            skipped = _skipped(operator, "Manifest")

            async def more_skips() -> bool:
                return _skipped(operator, "Manifest") >= skipped + 5

            await world.until(more_skips, "five more skipped checks", timeout=30)
            assert [reconciles(operator, kind) for kind in KINDS] == runs

            # drift is reported by the watch and reverted at once, settled or not
            tampered = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "beta-a", "namespace": "kyma-system"},
                "data": {"version": "tampered"},
            }
            await remote.apply(tampered, field_manager="someone-else")

            async def reverted() -> bool:
                configmap = await world.remote_configmap("beta-a")
                return bool(configmap and configmap["data"]["version"] == "1.0.0")

            await world.until(reverted, "beta-a reverted", timeout=10)

            # a watch that ended could have missed a change: the next periodic check runs
            # again (and opens the watch anew), then the Manifest settles again
            await world.until(more_skips, "settled again", timeout=30)
            before = reconciles(operator, "Manifest")
            for task in list(operator.drift._watches.values()):
                task.cancel()
            await asyncio.gather(*operator.drift._watches.values(), return_exceptions=True)

            async def checked_again() -> bool:
                return reconciles(operator, "Manifest") > before and len(operator.drift) > 0

            await world.until(checked_again, "a check after the watch ended", timeout=10)
