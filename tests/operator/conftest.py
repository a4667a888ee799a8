"""One operator per test, watching the test's namespace on the session cluster (the control
plane), with a second real apiserver as the remote cluster its modules go to."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reconciler.charts.sources import ChartCache
from reconciler.kube.cluster import Cluster
from reconciler.model.lifecycle import API_VERSION
from reconciler.operator.clusters.install import install_crds
from reconciler.operator.runtime.wiring import Operator
from reconciler.operator.settings import OperatorSettings
from reconciler.util.polling import poll_until
from tests.conftest import ClusterFactory, KubeTarget
from tests.operator import modules
from tests.operator.running import running

LOCAL_SOURCES: dict[str, object] = {
    "source_local_files": True,
    "source_schemes": ["https", "http", "oci"],
}
"""The test modules' charts are local files (and http servers on loopback): allowed here."""
LOCAL_SOURCES_ENV = {
    "RECONCILER_OPERATOR_SOURCE_LOCAL_FILES": "true",
    "RECONCILER_OPERATOR_SOURCE_SCHEMES": '["https", "http", "oci"]',
}

SETTINGS = OperatorSettings(
    **LOCAL_SOURCES,  # type: ignore[arg-type]
    success_interval=30,
    busy_interval=0.5,
    warning_interval=2,
    error_interval=0.5,
    error_max_interval=2,
    timeout=60,
)


@dataclass
class World:
    control: Cluster
    remote: Cluster
    remote_kubeconfig: Path
    namespace: str
    charts: Path
    operator: Operator | None = None
    """The in-process operator (None when a test runs its own as processes)."""
    control_kubeconfig: Path | None = None

    async def get(
        self,
        kind: str,
        name: str,
        *,
        remote: bool = False,
        namespace: str | None = None,
        api_version: str = API_VERSION,
    ) -> dict[str, Any] | None:
        cluster = self.remote if remote else self.control
        live = await cluster.get(
            {
                "apiVersion": api_version,
                "kind": kind,
                "metadata": {"name": name, "namespace": namespace or self.namespace},
            }
        )
        return None if live is None else live.raw

    async def until(
        self, check: Callable[[], Awaitable[Any]], what: str, timeout: float = 90
    ) -> Any:
        return await poll_until(check, timeout=timeout, what=what, interval=0.2)

    async def kyma_state(self, name: str, state: str) -> dict[str, Any]:
        async def check() -> dict[str, Any] | None:
            kyma = await self.get("Kyma", name)
            return kyma if kyma and (kyma.get("status") or {}).get("state") == state else None

        async def describe() -> str:
            return str((await self.get("Kyma", name) or {}).get("status"))

        try:
            result: dict[str, Any] = await self.until(check, f"Kyma {name} {state}")
        except Exception as exc:
            raise AssertionError(f"{exc}; status: {await describe()}") from None
        return result

    async def remote_configmap(self, name: str) -> dict[str, Any] | None:
        return await self.get(
            "ConfigMap", name, remote=True, namespace="kyma-system", api_version="v1"
        )

    async def catalog(self) -> None:
        """alpha 1.0.0 (regular) and 1.1.0 (fast, drops alpha-b), beta 1.0.0 on both."""
        ns = self.namespace
        alpha1 = modules.module_chart(self.charts, "alpha", "1.0.0", ["alpha-a", "alpha-b"])
        alpha2 = modules.module_chart(self.charts, "alpha", "1.1.0", ["alpha-a"])
        beta = modules.module_chart(self.charts, "beta", "1.0.0", ["beta-a"])
        for body in (
            modules.template(ns, "alpha", "1.0.0", alpha1),
            modules.template(ns, "alpha", "1.1.0", alpha2),
            modules.template(ns, "beta", "1.0.0", beta),
            modules.release_meta(ns, "alpha", {"regular": "1.0.0", "fast": "1.1.0"}),
            modules.release_meta(ns, "beta", {"regular": "1.0.0", "fast": "1.0.0"}),
        ):
            await self.control.apply(body)


@asynccontextmanager
async def bare_world(
    kube_cluster: KubeTarget, namespace: str, cluster_factory: ClusterFactory, charts: Path
) -> AsyncIterator[World]:
    """The two clusters and the operator's CRDs, no operator: for a test that runs its own (as
    processes, or several one after another)."""
    remote_target = await cluster_factory(controller_manager=True)  # namespaces finalize
    async with (
        await Cluster.connect(kube_cluster.kubeconfig) as control,
        await Cluster.connect(remote_target.kubeconfig) as remote,
    ):
        await install_crds(control)
        yield World(
            control,
            remote,
            remote_target.kubeconfig,
            namespace,
            charts,
            control_kubeconfig=kube_cluster.kubeconfig,
        )


@pytest.fixture
async def world(
    kube_cluster: KubeTarget, namespace: str, cluster_factory: ClusterFactory, tmp_path: Path
) -> AsyncIterator[World]:
    remote_target = await cluster_factory(controller_manager=True)  # namespaces finalize
    async with (
        await Cluster.connect(kube_cluster.kubeconfig) as control,
        await Cluster.connect(remote_target.kubeconfig) as remote,
    ):
        await install_crds(control)
        operator = Operator(control, ChartCache(tmp_path / "cache"), SETTINGS)
        async with running(operator, kube_cluster.kubeconfig, namespace):
            yield World(
                control,
                remote,
                remote_target.kubeconfig,
                namespace,
                tmp_path / "charts",
                operator,
                kube_cluster.kubeconfig,
            )
