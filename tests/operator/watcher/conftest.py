"""An in-process operator with the watcher's listener on a free port, watching the test's
namespace of the session cluster (the control plane; the watcher CA's Secret lives there too)."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from reconciler.charts.sources import ChartCache
from reconciler.kube.cluster import Cluster
from reconciler.operator.clusters.install import install_crds
from reconciler.operator.runtime.wiring import Operator
from reconciler.operator.watcher.ca import CertificateAuthority, KeyPair
from reconciler.operator.watcher.settings import WatcherSettings
from tests.conftest import KubeTarget
from tests.operator.conftest import SETTINGS


@dataclass
class Plane:
    control: Cluster
    namespace: str
    operator: Operator
    ca: CertificateAuthority
    tmp: Path

    @property
    def url(self) -> str:
        assert self.operator.listener is not None
        return f"https://127.0.0.1:{self.operator.listener.port}"

    def client(self, pair: KeyPair | None, ca: bytes | None = None) -> httpx.AsyncClient:
        """An HTTPS client trusting the watcher CA, presenting `pair` (None: no certificate)."""
        context = ssl.create_default_context(cadata=(ca or self.ca.cert_pem).decode())
        if pair is not None:
            directory = self.tmp / f"client-{id(pair)}"
            directory.mkdir(exist_ok=True)
            (directory / "tls.crt").write_bytes(pair.cert)
            (directory / "tls.key").write_bytes(pair.key)
            context.load_cert_chain(directory / "tls.crt", directory / "tls.key")
        return httpx.AsyncClient(verify=context, timeout=10)


def watcher_settings(namespace: str, **extra: object) -> WatcherSettings:
    values: dict[str, object] = {
        "listener_url": "https://127.0.0.1",  # the port is chosen at start (listener_port 0)
        "listener_port": 0,
        "listener_host": "127.0.0.1",
        "ca_namespace": namespace,
        "kyma_namespace": namespace,
        **extra,
    }
    return WatcherSettings.model_validate(values)


@pytest.fixture
async def plane(
    kube_cluster: KubeTarget, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Plane]:
    """Extra watcher settings by indirect parametrization (`request.param`, a dict)."""
    async with await Cluster.connect(kube_cluster.kubeconfig) as control:
        await install_crds(control)
        settings = watcher_settings(namespace, **getattr(request, "param", {}))
        operator = Operator(control, ChartCache(tmp_path / "cache"), SETTINGS, settings)
        stop, ready = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(
            operator.run(kube_cluster.kubeconfig, namespace=namespace, stop=stop, ready=ready)
        )
        await asyncio.wait_for(ready.wait(), 30)
        ca = await CertificateAuthority.load_or_create(control, namespace, settings.ca_secret)
        try:
            yield Plane(control, namespace, operator, ca, tmp_path)
        finally:
            stop.set()
            await asyncio.wait_for(task, 60)
