"""A real cluster client that remembers its requests, so tests can count what a run sent."""

from __future__ import annotations

from typing import Any

from reconciler.kube.client import KubeClient
from reconciler.kube.cluster import Cluster
from tests.conftest import KubeTarget


class RecordingKubeClient(KubeClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[tuple[str, str]] = []

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        self.sent.append((method, path))
        return await super().request(method, path, **kwargs)

    def take(self) -> list[tuple[str, str]]:
        """The requests since the last call."""
        sent, self.sent = self.sent, []
        return sent


async def recording_cluster(target: KubeTarget) -> tuple[Cluster, RecordingKubeClient]:
    client = RecordingKubeClient.from_kubeconfig(target.kubeconfig)
    assert isinstance(client, RecordingKubeClient)
    cluster = Cluster(client)
    await cluster.version()
    return cluster, client
