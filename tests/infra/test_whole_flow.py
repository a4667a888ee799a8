"""The whole control-plane flow in one process tree: a Runtime becomes a Shoot, the manager's
kubeconfig Secret is what operator mode uses to install the Kyma's modules on that shoot."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from reconciler.charts.sources import ChartCache
from reconciler.operator.clusters.install import install_crds
from reconciler.operator.runtime.wiring import Operator
from reconciler.operator.settings import OperatorSettings
from reconciler.util.polling import poll_until
from tests.infra.conftest import World
from tests.infra.samples import runtime
from tests.operator import modules
from tests.operator.conftest import LOCAL_SOURCES

OPERATOR = OperatorSettings(
    busy_interval=0.5,
    error_interval=0.5,
    error_max_interval=2,
    **LOCAL_SOURCES,  # type: ignore[arg-type]
)


async def test_a_runtimes_kubeconfig_lets_the_operator_install_a_kymas_modules_on_the_shoot(
    world: World, tmp_path: Path
) -> None:
    ns = world.namespace
    await install_crds(world.kcp)
    chart = modules.module_chart(tmp_path / "charts", "alpha", "1.0.0", ["alpha-a"])
    for body in (
        modules.template(ns, "alpha", "1.0.0", chart),
        modules.release_meta(ns, "alpha", {"regular": "1.0.0"}),
        modules.kyma(ns, "rt-e2e", "regular", [{"name": "alpha", "managed": True}]),
    ):
        await world.kcp.apply(body)
    operator = Operator(world.kcp, ChartCache(tmp_path / "cache"), OPERATOR)
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(
        operator.run(world.kcp_kubeconfig, namespace=ns, stop=stop, ready=ready)
    )
    try:
        await asyncio.wait_for(ready.wait(), 30)
        await world.kcp.apply(runtime("rt-e2e", ns, shoot="shoot-e2e"))
        await world.state("rt-e2e", "Ready")

        async def kyma_ready() -> dict[str, Any] | None:
            live = await world.kcp.get(modules.kyma(ns, "rt-e2e", "regular", []))
            state = ((live.raw if live else {}).get("status") or {}).get("state")
            return live.raw if live and state == "Ready" else None

        await poll_until(kyma_ready, timeout=120, what="Kyma rt-e2e Ready", interval=0.2)
        async with world.shoot_cluster() as shoot:
            configmap = await shoot.get(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "alpha-a", "namespace": "kyma-system"},
                }
            )
            assert configmap is not None
            assert configmap.raw["data"]["version"] == "1.0.0"
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)
