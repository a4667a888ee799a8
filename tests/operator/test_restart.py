"""kill -9 of the operator process mid-work: the next process finishes it, with one Manifest per
module and no object left twice or half-installed."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from reconciler.devcluster.processes import tied_to_parent
from reconciler.model.lifecycle import API_VERSION, module_object_name
from tests.conftest import ClusterFactory, KubeTarget
from tests.operator import modules
from tests.operator.conftest import LOCAL_SOURCES_ENV, bare_world

ENV = {
    "RECONCILER_OPERATOR_BUSY_INTERVAL": "0.5",
    "RECONCILER_OPERATOR_ERROR_INTERVAL": "0.5",
    "RECONCILER_OPERATOR_ERROR_MAX_INTERVAL": "2",
    **LOCAL_SOURCES_ENV,
}


async def _start(kubeconfig: Path, namespace: str) -> asyncio.subprocess.Process:
    reconciler = Path(sys.executable).with_name("reconciler")
    command = [str(reconciler), "operator", "run", "--kubeconfig", str(kubeconfig)]
    return await asyncio.create_subprocess_exec(
        *tied_to_parent([*command, "--namespace", namespace]),  # gone with a killed test run
        env={**os.environ, **ENV},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )


async def test_a_killed_operator_leaves_work_the_next_one_finishes(
    kube_cluster: KubeTarget, namespace: str, cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    # World only for its helpers: the operators here are processes
    async with bare_world(kube_cluster, namespace, cluster_factory, tmp_path) as world:
        control, remote = world.control, world.remote
        await world.catalog()
        await control.apply(modules.kubeconfig_secret(namespace, "kr", world.remote_kubeconfig))
        spec = [{"name": "alpha", "managed": True}, {"name": "beta", "managed": True}]
        await control.apply(modules.kyma(namespace, "kr", "regular", spec))

        first = await _start(kube_cluster.kubeconfig, namespace)

        async def work_started() -> dict[str, Any] | None:
            return await world.get("Manifest", module_object_name("kr", "alpha"))

        try:
            await world.until(work_started, "the first operator creating Manifests", timeout=60)
        finally:
            first.send_signal(signal.SIGKILL)
            await first.wait()

        second = await _start(kube_cluster.kubeconfig, namespace)
        try:
            await world.kyma_state("kr", "Ready")
        finally:
            second.terminate()
            await asyncio.wait_for(second.wait(), 30)

        manifests = await control.list(
            await control.mapper.resolve(API_VERSION, "Manifest"), namespace=namespace
        )
        assert sorted(m.name for m in manifests) == sorted(
            module_object_name("kr", m) for m in ("alpha", "beta")
        )
        configmaps = await remote.list(
            await remote.mapper.resolve("v1", "ConfigMap"), namespace="kyma-system"
        )
        names = [c.name for c in configmaps]
        assert len(names) == len(set(names))
        assert {"alpha-a", "alpha-b", "beta-a"} <= set(names)
