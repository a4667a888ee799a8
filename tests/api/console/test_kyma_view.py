"""The console's Kyma view against the test bed: per-module state of a Kyma and its Manifests
when the console is pointed at a cluster with operator-mode resources; a plain message when it
is not pointed anywhere or the cluster has no such kinds."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from reconciler.api import ApiSettings
from reconciler.api.auth import Role
from reconciler.api.console.kyma import read_kyma_view
from reconciler.api.context import ApiContext
from reconciler.kube.client import KubeClient
from reconciler.kube.clients import ClientCache
from tests.api.console.kyma_objects import create_kyma_objects, create_rollout
from tests.api.support import Tokens, running_api
from tests.conftest import ClusterFactory, KubeTarget


async def test_kyma_view_shows_each_modules_state_version_and_message(
    kube_cluster: KubeTarget, namespace: str, tmp_path: Path, tokens: Tokens
) -> None:
    await create_kyma_objects(kube_cluster.kubeconfig, namespace)
    await create_rollout(kube_cluster.kubeconfig, namespace)
    settings = ApiSettings(tokens_file=tokens.path, console_kubeconfig=kube_cluster.kubeconfig)
    async with running_api(tmp_path, settings, headers=tokens.header(Role.VIEWER)) as api:
        answer = await api.client.get("/ui/fragments/kyma")

    assert answer.status_code == 200
    text = answer.text
    assert f"{namespace}/kyma-console" in text
    for expected in ("serverless", "1.4.0", "state-ready", "eventing", "2.1.0", "state-error"):
        assert expected in text
    assert "nats: 0/1 ready" in text  # the module's message and the Manifest's condition
    assert f"{namespace}/kyma-console-eventing" in text
    # the rollout: its waves as a bar (the stopped wave red), the Kyma that blocks it
    assert f"{namespace}/eventing" in text
    assert "2.0.0 → 2.1.0" in text
    assert 'class="wave wave-failed span-2"' in text
    assert 'class="wave wave-pending span-18"' in text
    assert "canary 0/1" in text
    assert "wave canary: 1 of 1 Kymas not Ready on 2.1.0 within 60s" in text
    assert '<td class="mono">kyma-console-eventing</td>' in text


async def test_a_cluster_without_the_operator_kinds_says_so(
    cluster_factory: ClusterFactory,
) -> None:
    bare = await cluster_factory()

    clients = ClientCache()
    try:
        view = await read_kyma_view(bare.kubeconfig, clients)
    finally:
        await clients.aclose()

    assert view.configured
    assert not view.installed
    assert view.error == ""


async def test_polls_share_one_client(
    kube_cluster: KubeTarget, tmp_path: Path, tokens: Tokens, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The view refreshes every 5 s: a handshake per refresh and viewer is what it must not do."""
    opened: list[KubeClient] = []
    new = ClientCache._new

    def counting(self: ClientCache, kubeconfig: str | Path, *, text: bool = False) -> KubeClient:
        client = new(self, kubeconfig, text=text)
        opened.append(client)
        return client

    monkeypatch.setattr(ClientCache, "_new", counting)
    settings = ApiSettings(tokens_file=tokens.path, console_kubeconfig=kube_cluster.kubeconfig)
    async with running_api(tmp_path, settings, headers=tokens.header(Role.VIEWER)) as api:
        for _ in range(5):
            answer = await api.client.get("/ui/fragments/kyma")
            assert answer.status_code == 200
            assert "cannot read the cluster" not in answer.text
        context: ApiContext = api.app.state.api
        assert len(context.console_clients) == 1

    assert len(opened) == 1


async def test_a_refused_or_unreachable_client_is_not_kept(
    kube_cluster: KubeTarget, tmp_path: Path
) -> None:
    """A re-issued token or a restarted apiserver must not leave the view failing until the
    client idles out: the failing client is dropped and the next refresh builds a new one."""
    config = yaml.safe_load(kube_cluster.kubeconfig.read_text())
    for user in config["users"]:
        user["user"] = {"token": "not-a-valid-token"}
    refused = tmp_path / "refused.yaml"
    refused.write_text(yaml.safe_dump(config))
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = "https://127.0.0.1:1"
    unreachable = tmp_path / "unreachable.yaml"
    unreachable.write_text(yaml.safe_dump(config))
    clients = ClientCache()
    try:
        for kubeconfig in (refused, unreachable):
            view = await read_kyma_view(kubeconfig, clients)
            assert view.error.startswith("cannot read the cluster"), view
            assert len(clients) == 0
        view = await read_kyma_view(kube_cluster.kubeconfig, clients)
        assert view.error == ""
        assert len(clients) == 1
    finally:
        await clients.aclose()
