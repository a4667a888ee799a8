"""The console's Kyma view against the test bed: per-module state of a Kyma and its Manifests
when the console is pointed at a cluster with operator-mode resources; a plain message when it
is not pointed anywhere or the cluster has no such kinds."""

from __future__ import annotations

from pathlib import Path

from reconciler.api import ApiSettings
from reconciler.api.auth import Role
from reconciler.api.console.kyma import read_kyma_view
from tests.api.console.kyma_objects import create_kyma_objects
from tests.api.support import Tokens, running_api
from tests.conftest import ClusterFactory, KubeTarget


async def test_kyma_view_shows_each_modules_state_version_and_message(
    kube_cluster: KubeTarget, namespace: str, tmp_path: Path, tokens: Tokens
) -> None:
    await create_kyma_objects(kube_cluster.kubeconfig, namespace)
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


async def test_a_cluster_without_the_operator_kinds_says_so(
    cluster_factory: ClusterFactory,
) -> None:
    bare = await cluster_factory()

    view = await read_kyma_view(bare.kubeconfig)

    assert view.configured
    assert not view.installed
    assert view.error == ""
