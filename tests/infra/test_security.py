"""What a Runtime's author cannot do through the infrastructure manager (docs/security.md,
"Runtime author -> Gardener/shoot"): address anything in the garden cluster but its own Shoot,
take over another Runtime's Shoot, point its kubeconfig at another Kyma, or make a Kubernetes
system identity (anonymous) an administrator of the shoot."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.errors import ApplyError
from reconciler.infra.gardener import GardenerError
from reconciler.infra.kubeconfigs import secret_name
from reconciler.infra.states import binding_name
from reconciler.kube.cluster import Cluster
from reconciler.model.infrastructure import KYMA_NAME, RUNTIME_ID, SHOOT_RUNTIME_ID
from reconciler.util.polling import poll_until
from tests.infra.conftest import Garden, World
from tests.infra.samples import runtime

TRAVERSALS = (
    "x/../../../../../../../api/v1/namespaces/{ns}/secrets/victim",
    "../../../../../api/v1/namespaces/{ns}/secrets/victim",
    "x%2F..%2F..%2Fsecrets%2Fvictim",
    "victim?dryRun=All",
    "a.b",
    "UPPER",
    "x" * 64,
    "",
)


def _victim(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "victim", "namespace": namespace},
        "stringData": {"token": "keep-me"},
    }


@pytest.mark.parametrize("pattern", TRAVERSALS)
async def test_the_gardener_client_addresses_nothing_but_a_shoot_of_its_project(
    garden: Garden, kube_cluster: Any, pattern: str
) -> None:
    gardener = garden.gardener
    name = pattern.format(ns=gardener.namespace)
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        await cluster.apply(_victim(gardener.namespace))
        for attempt in (
            gardener.get_shoot(name),
            gardener.delete_shoot(name),
            gardener.annotate(name, {"x": "y"}),
            gardener.admin_kubeconfig(name, 600),
            gardener.apply_shoot({"metadata": {"name": name}, "spec": {}}),
        ):
            with pytest.raises(GardenerError, match="invalid Shoot name") as refused:
                await attempt
            assert refused.value.retryable is False
        assert await cluster.get(_victim(gardener.namespace)) is not None
    assert sum(garden.simulator.requests.values()) == 0  # nothing was even sent


async def test_the_runtime_crd_refuses_a_shoot_name_that_is_not_a_dns_label(world: World) -> None:
    body = runtime("rt-t", world.namespace, shoot="x/../../api/v1/namespaces/default/secrets/s")
    with pytest.raises(ApplyError, match=r"spec\.shoot\.name in body should match"):
        await world.kcp.apply(body)


async def test_the_simulated_gardener_refuses_shoot_names_as_gardener_does(garden: Garden) -> None:
    gardener = garden.gardener
    too_long = "s" * (22 - len(garden.project))  # valid label, too long with the project's name
    with pytest.raises(GardenerError, match="must not exceed 21 characters") as refused:
        await gardener.apply_shoot({"metadata": {"name": too_long}, "spec": {}})
    assert refused.value.retryable is False
    assert await gardener.get_shoot(too_long) is None


async def _condition(world: World, name: str, kind: str) -> dict[str, Any]:
    live = await world.runtime(name)
    assert live is not None
    found: dict[str, Any] = next(c for c in live["status"]["conditions"] if c["type"] == kind)
    return found


async def _binding(shoot: Cluster, user: str) -> dict[str, Any] | None:
    live = await shoot.get(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": binding_name(user)},
        }
    )
    return None if live is None else live.raw


async def test_a_second_runtime_naming_an_existing_shoot_fails_and_touches_nothing(
    world: World,
) -> None:
    owner = runtime("rt-own", world.namespace, shoot="shoot-o", administrators=("owner@x.io",))
    await world.kcp.apply(owner)
    await world.state("rt-own", "Ready")
    shoot = await world.garden.gardener.get_shoot("shoot-o")
    assert shoot is not None
    assert shoot["metadata"]["annotations"][SHOOT_RUNTIME_ID] == "rt-own"
    kubeconfigs_issued = world.garden.simulator.kubeconfigs_issued

    thief = runtime("rt-thief", world.namespace, shoot="shoot-o", administrators=("thief@x.io",))
    await world.kcp.apply(thief)
    await world.state("rt-thief", "Failed")
    provisioned = await _condition(world, "rt-thief", "Provisioned")
    assert provisioned["reason"] == "ShootOwnedByAnotherRuntime"
    assert "belongs to Runtime rt-own" in provisioned["message"]
    assert world.garden.simulator.kubeconfigs_issued == kubeconfigs_issued
    secret = await world.kcp.get(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": secret_name("rt-thief"), "namespace": world.namespace},
        }
    )
    assert secret is None
    async with world.shoot_cluster() as cluster:
        assert await _binding(cluster, "owner@x.io") is not None
        assert await _binding(cluster, "thief@x.io") is None

    await world.kcp.delete(thief)

    async def thief_gone() -> bool:
        return await world.runtime("rt-thief") is None

    await poll_until(thief_gone, timeout=60, what="the second Runtime deleted")
    shoot = await world.garden.gardener.get_shoot("shoot-o")
    assert shoot is not None
    assert not shoot["metadata"].get("deletionTimestamp")
    assert shoot["metadata"]["annotations"][SHOOT_RUNTIME_ID] == "rt-own"
    live = await world.runtime("rt-own")
    assert live is not None
    assert live["status"]["state"] == "Ready"


async def _refused_before_gardener(world: World, body: dict[str, Any], problem: str) -> None:
    """The Runtime fails naming `problem`, and no Shoot is created for it."""
    await world.kcp.apply(body)
    name = body["metadata"]["name"]
    await world.state(name, "Failed")
    provisioned = await _condition(world, name, "Provisioned")
    assert provisioned["reason"] == "ConversionErr"
    assert problem in provisioned["message"]
    shoot = body["spec"]["shoot"]["name"]
    assert await world.garden.gardener.get_shoot(shoot) is None


async def test_the_kubeconfig_secret_names_the_runtimes_own_kyma_not_a_label(world: World) -> None:
    body = runtime("rt-lbl", world.namespace, shoot="shoot-lbl")
    body["metadata"]["labels"][KYMA_NAME] = "someone-elses-kyma"
    body["metadata"]["labels"]["kyma-project.io/anything"] = "x"
    await world.kcp.apply(body)
    await world.state("rt-lbl", "Ready")

    async def kubeconfig_secret() -> Any:
        return await world.kcp.get(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": secret_name("rt-lbl"), "namespace": world.namespace},
            }
        )

    live = await kubeconfig_secret()
    assert live is not None
    labels = live.raw["metadata"]["labels"]
    assert labels[KYMA_NAME] == "rt-lbl"
    assert "kyma-project.io/anything" not in labels
    assert labels["kyma-project.io/global-account-id"] == "ga-1"

    # a Runtime labelled with that runtime id would write that Secret: refused, nothing written
    impostor = runtime("rt-imp", world.namespace, shoot="shoot-imp")
    impostor["metadata"]["labels"][RUNTIME_ID] = "rt-lbl"
    await _refused_before_gardener(world, impostor, "differs from the Runtime's name")
    again = await kubeconfig_secret()
    assert again is not None
    assert again.raw["data"] == live.raw["data"]


@pytest.mark.parametrize(
    "identity", ["system:anonymous", "system:serviceaccount:kube-system:default", "System:Nodes"]
)
async def test_a_system_identity_is_never_made_an_administrator(
    world: World, identity: str
) -> None:
    body = runtime("rt-anon", world.namespace, shoot="shoot-an", administrators=(identity,))
    await _refused_before_gardener(world, body, "system identity")
    async with world.shoot_cluster() as cluster:
        assert await _binding(cluster, identity) is None
