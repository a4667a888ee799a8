"""Runtime and GardenerCluster CRDs: compatible with KIM's, served by Kubernetes 1.20."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.infra.crds import all_crds
from reconciler.infra.install import install_crds
from reconciler.kube.cluster import Cluster
from reconciler.model.infrastructure import VERSION, RuntimeSpec
from tests.conftest import KubeTarget
from tests.helpers.crds import differences, version_of
from tests.infra.samples import runtime, worker

REFERENCE = Path("/work/shared/reference/crds/infrastructure-manager")
ADDITIONS = Path(__file__).parent / "fixtures" / "runtime-crd-2026.yaml"
"""What the version the current broker pins adds to the 2025 reference (written down by us)."""
RETYPED = "root.spec.imageRegistryCache"
"""2025's `{enabled}` is 2026's list of caches: the CRD follows the broker's version, and the
model reads a stored object of the old form as no caches (test_model_reads_both_...)."""
WORKERS = "root.spec.shoot.provider.{}[]"
KEPT = {WORKERS.format("workers"), WORKERS.format("additionalWorkers")}
"""Worker pools keep the Gardener fields we do not model (the reference spells them all out)."""


def _reference(crd: dict[str, Any], *, current: bool = True) -> dict[str, Any]:
    """KIM's CRD: of 2025 (`current=False`), or with what the pinned 2026 version adds."""
    name = f"{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml"
    reference = dict(yaml.safe_load((REFERENCE / name).read_text()))
    if current and crd["spec"]["names"]["kind"] == "Runtime":
        schema = version_of(reference, VERSION)["schema"]["openAPIV3Schema"]
        for path, fragment in yaml.safe_load(ADDITIONS.read_text()).items():
            *parents, leaf = path.split(".")
            node = schema
            for part in parents:
                node = node["properties"][part]
            node["properties"][leaf] = fragment
    return reference


@pytest.mark.parametrize("crd", all_crds(), ids=lambda crd: crd["spec"]["names"]["kind"])
def test_every_field_exists_in_the_reference_with_the_same_type(crd: dict[str, Any]) -> None:
    reference = _reference(crd)
    assert reference["metadata"]["name"] == crd["metadata"]["name"]
    assert reference["spec"]["scope"] == crd["spec"]["scope"]
    assert reference["spec"]["names"] == crd["spec"]["names"]
    ours, theirs = version_of(crd, VERSION), version_of(reference, VERSION)
    schema_ours = ours["schema"]["openAPIV3Schema"]
    schema_theirs = theirs["schema"]["openAPIV3Schema"]
    assert differences(schema_ours, schema_theirs, "root", KEPT) == []
    assert ours["subresources"] == theirs["subresources"]
    assert ours["additionalPrinterColumns"] == theirs["additionalPrinterColumns"]


@pytest.mark.parametrize("crd", all_crds(), ids=lambda crd: crd["spec"]["names"]["kind"])
def test_every_reference_field_down_to_the_worker_pools_is_supported(crd: dict[str, Any]) -> None:
    """Nothing of an existing Runtime is pruned, of 2025 or as the current broker writes it:
    every reference field exists in ours, except below the worker pools, which keep unknown
    fields as they are."""
    missing: list[str] = []

    def walk(theirs: dict[str, Any], ours: dict[str, Any], path: str) -> None:
        if path in KEPT or ours.get("x-kubernetes-preserve-unknown-fields"):
            return
        if path == RETYPED and theirs.get("type") != ours.get("type"):
            return
        for name, sub in (theirs.get("properties") or {}).items():
            if name not in (ours.get("properties") or {}):
                missing.append(f"{path}.{name}")
            else:
                walk(sub, ours["properties"][name], f"{path}.{name}")
        if "items" in theirs and "items" in ours:
            walk(theirs["items"], ours["items"], f"{path}[]")

    for current in (False, True):
        reference = version_of(_reference(crd, current=current), VERSION)
        walk(
            reference["schema"]["openAPIV3Schema"],
            version_of(crd, VERSION)["schema"]["openAPIV3Schema"],
            "root",
        )
    assert missing == []


async def test_crds_install_on_kubernetes_1_20_and_keep_unmodelled_worker_fields(
    kube_cluster: KubeTarget, namespace: str
) -> None:
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        names = await install_crds(cluster)
        assert sorted(names) == [
            "gardenerclusters.infrastructuremanager.kyma-project.io",
            "runtimes.infrastructuremanager.kyma-project.io",
        ]
        assert await install_crds(cluster) == names  # idempotent
        pool = worker(cri={"name": "containerd"}, maxSurge="25%")
        live = await cluster.apply(runtime("rt-1", namespace, workers=[pool]))
        kept = live.raw["spec"]["shoot"]["provider"]["workers"][0]
        assert kept["cri"] == {"name": "containerd"}
        assert kept["maxSurge"] == "25%"
        assert kept["maxUnavailable"] == 0


def test_model_reads_both_forms_of_the_image_registry_cache() -> None:
    """A Runtime stored under the 2025 CRD (`imageRegistryCache: {enabled: true}`) still reads;
    the broker's current form is a list of caches."""
    old = runtime("rt-old", "ns")
    old["spec"]["imageRegistryCache"] = {"enabled": True}
    assert RuntimeSpec.model_validate(old["spec"]).image_registry_cache == []
    new = runtime("rt-new", "ns")
    cache = {"name": "c", "namespace": "ns", "uid": "u", "config": {"upstream": "docker.io"}}
    new["spec"]["imageRegistryCache"] = [cache]
    caches = RuntimeSpec.model_validate(new["spec"]).image_registry_cache
    assert caches is not None
    assert caches[0].config.upstream == "docker.io"
