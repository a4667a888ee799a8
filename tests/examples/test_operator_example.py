"""examples/operator: the catalog and Kyma parse as our models and, applied as they are, end in
a Ready Kyma with the module installed in the operator's own cluster (`sync: "false"`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from reconciler.charts.sources import ChartCache
from reconciler.kube.cluster import Cluster
from reconciler.model.lifecycle import (
    API_VERSION,
    KymaSpec,
    ModuleReleaseMetaSpec,
    ModuleTemplateSpec,
)
from reconciler.operator.clusters.install import install_crds
from reconciler.operator.runtime.wiring import Operator
from reconciler.operator.settings import OperatorSettings
from reconciler.util.polling import poll_until
from tests.conftest import KubeTarget
from tests.operator.running import running

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "operator"
SPECS = {
    "Kyma": KymaSpec,
    "ModuleTemplate": ModuleTemplateSpec,
    "ModuleReleaseMeta": ModuleReleaseMetaSpec,
}


def _documents() -> list[dict[str, object]]:
    return [
        doc
        for name in ("catalog.yaml", "kyma.yaml")
        for doc in yaml.safe_load_all((EXAMPLE / name).read_text())
    ]


def test_the_example_resources_are_valid_for_our_models() -> None:
    for doc in _documents():
        SPECS[str(doc["kind"])].model_validate(doc["spec"])


async def test_the_example_kyma_gets_ready_with_its_module_installed_locally(
    kube_cluster: KubeTarget, namespace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # the catalog's chart link is relative to the repository root
    # the module into the test's namespace: kyma-system on the shared cluster is other tests'
    settings = OperatorSettings(
        busy_interval=0.5,
        error_interval=0.5,
        error_max_interval=2,
        module_namespace=namespace,
        source_local_files=True,  # the example's catalog links the chart in this repository
    )
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        await install_crds(cluster)
        for doc in _documents():
            doc["metadata"]["namespace"] = namespace  # type: ignore[index]
            await cluster.apply(doc)
        kyma = {
            "apiVersion": API_VERSION,
            "kind": "Kyma",
            "metadata": {"name": "demo", "namespace": namespace},
        }
        greeting = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "hello-greeting", "namespace": namespace},
        }

        async def ready() -> bool:
            live = await cluster.get(kyma)
            return bool(live and (live.raw.get("status") or {}).get("state") == "Ready")

        operator = Operator(cluster, ChartCache(tmp_path / "cache"), settings)
        async with running(operator, kube_cluster.kubeconfig, namespace):
            await poll_until(ready, timeout=90, what="example Kyma Ready")
            live = await cluster.get(greeting)
            assert live is not None
            assert live.raw["data"] == {"greeting": "Hello from a module"}
            await cluster.delete(kyma)

            async def removed() -> bool:
                return await cluster.get(kyma) is None and await cluster.get(greeting) is None

            await poll_until(removed, timeout=90, what="example Kyma and module removed")
