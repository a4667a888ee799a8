"""A simulated Gardener per test: the session cluster acts as the garden (Shoot CRD, a project
namespace `garden-<project>`), a second real apiserver acts as every shoot."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reconciler.devcluster.gardener import GardenerSimulator
from reconciler.errors import WaitTimeout
from reconciler.infra.gardener import Gardener, RateLimiter
from reconciler.infra.install import install_crds
from reconciler.infra.manager import InfraManager
from reconciler.infra.settings import InfraSettings
from reconciler.kube.client import KubeClient
from reconciler.kube.cluster import Cluster
from reconciler.model.infrastructure import API_VERSION
from reconciler.util.polling import poll_until
from tests.conftest import ClusterFactory, KubeTarget
from tests.infra.samples import CONVERTER_CONFIG


@dataclass
class Garden:
    simulator: GardenerSimulator
    gardener: Gardener
    """The manager's client, through the simulator's proxy."""
    project: str
    kubeconfig: Path
    """What the manager is given: the proxy's kubeconfig."""
    shoot: KubeTarget
    """The apiserver every Shoot's admin kubeconfig points at."""


@pytest.fixture
async def shoot_cluster(cluster_factory: ClusterFactory) -> KubeTarget:
    return await cluster_factory()


@pytest.fixture
async def garden(
    kube_cluster: KubeTarget, shoot_cluster: KubeTarget, tmp_path: Path
) -> AsyncIterator[Garden]:
    project = f"p{uuid.uuid4().hex[:8]}"
    simulator = GardenerSimulator(
        kube_cluster.kubeconfig, shoot_cluster.kubeconfig, tmp_path / "garden", duration=0.3
    )
    kubeconfig = await simulator.start()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"garden-{project}"}}
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        await cluster.apply(namespace)
        client = KubeClient.from_kubeconfig(kubeconfig)
        try:
            yield Garden(
                simulator,
                Gardener(client, project, RateLimiter(None)),
                project,
                kubeconfig,
                shoot_cluster,
            )
        finally:
            await client.aclose()
            await simulator.stop()
            await cluster.delete(namespace)


SETTINGS = InfraSettings(
    gardener_project="unused",
    gardener_rate=None,
    workers=4,
    kubeconfig_validity=3600,
    create_poll_interval=0.2,
    update_poll_interval=0.2,
    delete_poll_interval=0.2,
    gardener_requeue_interval=0.2,
    error_interval=0.2,
    error_max_interval=1.0,
    converter_config=CONVERTER_CONFIG,
    api_server_acl_enabled=True,  # only Runtimes listing ACL CIDRs are affected
)


class FakeClock:
    """The manager's clock in tests: real time plus whatever a test adds."""

    def __init__(self) -> None:
        self.offset = dt.timedelta()

    def __call__(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC) + self.offset


@dataclass
class World:
    garden: Garden
    kcp: Cluster
    namespace: str
    clock: FakeClock
    kcp_kubeconfig: Path
    manager: InfraManager | None = None
    _task: asyncio.Task[None] | None = None
    _stop: asyncio.Event | None = None

    async def start(self) -> InfraManager:
        settings = SETTINGS.model_copy(update={"gardener_project": self.garden.project})
        self.manager = InfraManager(
            self.kcp, KubeClient.from_kubeconfig(self.garden.kubeconfig), settings, clock=self.clock
        )
        self._stop, ready = asyncio.Event(), asyncio.Event()
        self._task = asyncio.create_task(
            self.manager.run(namespace=self.namespace, stop=self._stop, ready=ready)
        )
        await asyncio.wait_for(ready.wait(), 30)
        return self.manager

    async def stop(self) -> None:
        if self._task is not None and self._stop is not None:
            self._task.cancel()  # as abrupt as a kill: no pass gets to finish
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            assert self.manager is not None
            await self.manager.gardener.client.aclose()
            self._task = None

    def shoot_cluster(self) -> contextlib.AbstractAsyncContextManager[Cluster]:
        """The shoot apiserver as its administrator (not through the manager's kubeconfig)."""

        @contextlib.asynccontextmanager
        async def connected() -> AsyncIterator[Cluster]:
            async with await Cluster.connect(self.garden.shoot.kubeconfig) as cluster:
                yield cluster

        return connected()

    async def runtime(self, name: str) -> dict[str, Any] | None:
        live = await self.kcp.get(
            {
                "apiVersion": API_VERSION,
                "kind": "Runtime",
                "metadata": {"name": name, "namespace": self.namespace},
            }
        )
        return None if live is None else live.raw

    async def state(self, name: str, state: str, timeout: float = 60) -> dict[str, Any]:
        async def check() -> dict[str, Any] | None:
            runtime = await self.runtime(name)
            return runtime if ((runtime or {}).get("status") or {}).get("state") == state else None

        try:
            result: dict[str, Any] = await poll_until(
                check, timeout=timeout, what=f"Runtime {name} {state}", interval=0.1
            )
        except WaitTimeout as exc:
            status = ((await self.runtime(name)) or {}).get("status")
            raise AssertionError(f"{exc}; status: {status}") from None
        return result


@pytest.fixture
async def world(garden: Garden, kube_cluster: KubeTarget, namespace: str) -> AsyncIterator[World]:
    async with await Cluster.connect(kube_cluster.kubeconfig) as kcp:
        await install_crds(kcp)
        world = World(garden, kcp, namespace, FakeClock(), kube_cluster.kubeconfig)
        await world.start()
        try:
            yield world
        finally:
            await world.stop()
