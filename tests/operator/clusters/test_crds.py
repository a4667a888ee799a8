"""The generated CRDs: compatible with the lifecycle manager's, served by Kubernetes 1.20."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.kube.cluster import Cluster
from reconciler.model.lifecycle import API_VERSION, KINDS, VERSION
from reconciler.operator.clusters import crds
from reconciler.operator.clusters.install import install_crds
from tests.conftest import KubeTarget
from tests.helpers.crds import differences, version_of

REFERENCE = Path("/work/shared/reference/crds/lifecycle-manager")


def _version(crd: dict[str, Any]) -> dict[str, Any]:
    return version_of(crd, VERSION)


LIFECYCLE_CRDS = [crds.crd(kind) for kind in KINDS]
"""The kinds the lifecycle manager has too (ModuleConfig and SyncResource are ours only)."""


@pytest.mark.parametrize("generated", LIFECYCLE_CRDS, ids=lambda c: c["spec"]["names"]["kind"])
def test_every_supported_field_exists_in_the_reference_with_the_same_type(
    generated: dict[str, Any],
) -> None:
    crd = generated
    reference = yaml.safe_load(
        (REFERENCE / f"{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml").read_text()
    )
    assert reference["metadata"]["name"] == crd["metadata"]["name"]
    assert reference["spec"]["scope"] == crd["spec"]["scope"]
    ours, theirs = _version(crd), _version(reference)
    assert (
        differences(ours["schema"]["openAPIV3Schema"], theirs["schema"]["openAPIV3Schema"], "root")
        == []
    )
    assert (ours.get("subresources") or {}) == (theirs.get("subresources") or {})
    assert [c["jsonPath"] for c in ours["additionalPrinterColumns"]] == [
        c["jsonPath"] for c in theirs.get("additionalPrinterColumns", [])
    ]


def test_every_reference_spec_field_is_supported() -> None:
    """Nothing of an existing resource's spec is pruned by our CRDs (top two levels)."""
    for crd in LIFECYCLE_CRDS:
        name = f"{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml"
        theirs = _version(yaml.safe_load((REFERENCE / name).read_text()))
        ours = _version(crd)
        spec_theirs = theirs["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        spec_ours = ours["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        assert sorted(spec_theirs) == sorted(spec_ours), name


async def test_crds_install_on_kubernetes_1_20_and_keep_fields_and_status(
    kube_cluster: KubeTarget, namespace: str
) -> None:
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        names = await install_crds(cluster)
        assert "kymas.operator.kyma-project.io" in names
        assert await install_crds(cluster) == names  # idempotent
        kyma = await cluster.apply(
            {
                "apiVersion": API_VERSION,
                "kind": "Kyma",
                "metadata": {"name": "k1", "namespace": namespace},
                "spec": {
                    "channel": "regular",
                    "modules": [{"name": "m", "managed": True, "customResourcePolicy": "Ignore"}],
                },
            }
        )
        assert kyma.raw["spec"]["modules"][0]["customResourcePolicy"] == "Ignore"
        info = await cluster.info(kyma)
        await cluster.client.request(
            "PATCH",
            info.path(namespace, "k1") + "/status",
            body={"status": {"state": "Ready", "activeChannel": "regular"}},
            content_type="application/merge-patch+json",
        )
        live = await cluster.get(kyma)
        assert live is not None
        assert live.raw["status"] == {"state": "Ready", "activeChannel": "regular"}
