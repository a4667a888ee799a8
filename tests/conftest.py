"""Fixtures that build worlds from real parts: a test-bed apiserver, namespaces in it, more clusters
on demand, a real PostgreSQL server and a real OCI registry.

`RECONCILER_TEST_USE_EXISTING_CLUSTER=1` (with `KUBECONFIG`) runs the cluster tests against an
existing cluster instead of starting one, as envtest's USE_EXISTING_CLUSTER does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import structlog
from lightkube import AsyncClient, KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from reconciler.devcluster import DevCluster, PostgresServer
from reconciler.devcluster import kubelet as fake_kubelet
from reconciler.devcluster.build import build_all
from reconciler.devcluster.registry import OciRegistry
from reconciler.kube.client import KubeClient
from reconciler.observability.logging import reset_standard_logging
from tests.helpers.spare_clusters import SpareClusters


@pytest.fixture(autouse=True)
def _fresh_logging() -> Iterator[None]:
    """CLI tests configure structlog for their process; give every test the defaults back."""
    yield
    structlog.reset_defaults()
    reset_standard_logging()


@dataclass(frozen=True)
class KubeTarget:
    """A cluster tests may use: where its kubeconfig lives, and for an extra cluster of
    `cluster_factory` how to stop it early (a cluster whose apiserver is gone)."""

    kubeconfig: Path
    stop: Callable[[], Awaitable[None]] | None = field(default=None, compare=False, repr=False)


def _start(directory: Path, controller_manager: bool = True) -> DevCluster:
    build_all()
    cluster = DevCluster(directory, controller_manager=controller_manager, die_with_parent=True)
    asyncio.run(cluster.start())
    return cluster


@pytest.fixture(scope="session")
def kube_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeTarget]:
    """The session-wide test-bed cluster (or an existing one, when opted in)."""
    if os.environ.get("RECONCILER_TEST_USE_EXISTING_CLUSTER") == "1":
        yield KubeTarget(Path(os.environ.get("KUBECONFIG", Path.home() / ".kube" / "config")))
        return
    cluster = _start(tmp_path_factory.mktemp("kube"))
    try:
        yield KubeTarget(cluster.kubeconfig)
    finally:
        asyncio.run(cluster.stop())


@pytest.fixture
async def kube_client(kube_cluster: KubeTarget) -> AsyncIterator[AsyncClient]:
    client = AsyncClient(config=KubeConfig.from_file(kube_cluster.kubeconfig))
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def namespace(kube_client: AsyncClient, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A fresh namespace per test, deleted afterwards (without waiting for it to go)."""
    base = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-")
    name = f"{base}-{uuid.uuid4().hex[:6]}"
    await kube_client.create(Namespace(metadata=ObjectMeta(name=name)))
    try:
        yield name
    finally:
        await kube_client.delete(Namespace, name)


ClusterFactory = Callable[..., Awaitable[KubeTarget]]


@pytest.fixture(scope="session")
def spare_clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpareClusters]:
    """Extra clusters started one test ahead (`tests/helpers/spare_clusters.py`)."""
    build_all()
    spares = SpareClusters(lambda: tmp_path_factory.mktemp("extra-kube"))
    try:
        yield spares
    finally:
        spares.close()


@pytest.fixture
async def cluster_factory(spare_clusters: SpareClusters) -> AsyncIterator[ClusterFactory]:
    """Start extra, independent clusters (each its own etcd + apiserver, used by this test only);
    all stopped afterwards."""
    started: list[DevCluster] = []

    async def make(controller_manager: bool = False, kubelet: bool = False) -> KubeTarget:
        cluster = await spare_clusters.take(controller_manager, kubelet)
        started.append(cluster)
        return KubeTarget(cluster.kubeconfig, stop=cluster.stop)

    yield make
    for cluster in started:
        await cluster.stop()


def running_postgres(prefix: str = "reconciler-pg-") -> Iterator[PostgresServer]:
    """A started PostgreSQL server in a directory the postgres user may enter; removed after."""
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    server = PostgresServer(directory, die_with_parent=True)
    asyncio.run(server.start())
    try:
        yield server
    finally:
        asyncio.run(server.stop())
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the session."""
    yield from running_postgres()


@pytest.fixture(scope="module")
def postgres_url(postgres_server: PostgresServer, request: pytest.FixtureRequest) -> str:
    """A fresh, empty database per test module; its SQLAlchemy (asyncpg) URL."""
    module = re.sub(r"[^a-z0-9_]", "_", request.module.__name__.lower())[-40:]
    return asyncio.run(postgres_server.create_database(f"{module}_{uuid.uuid4().hex[:8]}"))


@pytest.fixture(scope="session")
def oci_registry() -> Iterator[str]:
    """One real OCI registry (Debian's docker-registry, plain HTTP, no auth) for the session;
    its `127.0.0.1:<port>`, as `oci://` references and `helm push --plain-http` name it."""
    directory = Path(tempfile.mkdtemp(prefix="reconciler-registry-"))
    registry = OciRegistry(directory, die_with_parent=True)
    asyncio.run(registry.start())
    try:
        yield registry.host
    finally:
        asyncio.run(registry.stop())
        shutil.rmtree(directory, ignore_errors=True)


Poll = Callable[[Callable[[], Awaitable[object]]], Awaitable[object]]


@contextlib.asynccontextmanager
async def kubelet_running(kube_cluster: KubeTarget, namespace: str) -> AsyncIterator[None]:
    """Play the kubelet for `namespace` during the block: Pending Pods get a kubelet's status."""
    client = KubeClient.from_kubeconfig(kube_cluster.kubeconfig)
    stop = asyncio.Event()
    loop = asyncio.create_task(fake_kubelet.run(client, namespace=namespace, stop=stop))
    try:
        yield
    finally:
        stop.set()
        await loop
        await client.aclose()


@pytest.fixture
async def kubelet(kube_cluster: KubeTarget, namespace: str) -> AsyncIterator[None]:
    """Play the kubelet for the test's namespace for the whole test."""
    async with kubelet_running(kube_cluster, namespace):
        yield
