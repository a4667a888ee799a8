"""The manager runs as KIM runs (docs/infra.md, "KIM parity: running"), on the test bed: the seed
checks, Gardener's error classes on create and on update, and a cluster KIM configured taken
over."""

from __future__ import annotations

import base64
from typing import Any

import yaml

from reconciler.devcluster.gardener import FAULT, seed
from reconciler.infra.converter.common import structured_auth_configmap
from reconciler.infra.shoot import shoot_for
from reconciler.infra.skr import BINDING_LABELS, OIDC_LABELS
from reconciler.model.infrastructure import (
    API_VERSION,
    CLUSTER_NAME,
    KYMA_NAME,
    MANAGED_BY,
    RUNTIME_ID,
    SHOOT_GENERATION,
    SHOOT_NAME,
    RuntimeSpec,
)
from reconciler.util.polling import poll_until
from tests.infra.conftest import World
from tests.infra.samples import CONVERTER, runtime, worker

RBAC = "rbac.authorization.k8s.io"


def condition(body: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in body["status"]["conditions"] if c["type"] == kind)


async def provisioned(world: World, name: str, reason: str, text: str) -> dict[str, Any]:
    """The Runtime once its `Provisioned` condition has `reason` and mentions `text`."""

    async def check() -> dict[str, Any] | None:
        live = await world.runtime(name)
        for c in ((live or {}).get("status") or {}).get("conditions") or []:
            if c["type"] == "Provisioned" and c["reason"] == reason and text in c["message"]:
                return live
        return None

    found: dict[str, Any] = await poll_until(
        check, timeout=60, what=f"Runtime {name} Provisioned {reason} ({text})", interval=0.1
    )
    return found


async def test_seeds_are_checked_and_reported_and_gardener_errors_retried_as_kim_does(
    world: World,
) -> None:
    simulator, gardener = world.garden.simulator, world.garden.gardener
    # create bound to a region without a usable seed: Failed, naming the regions with one,
    # nothing sent to Gardener
    lonely = runtime("rt-sa", world.namespace, shoot="shoot-sa")
    lonely["spec"]["shoot"].update({"region": "ap-southeast-1", "enforceSeedLocation": True})
    await world.kcp.apply(lonely)
    failed = await world.state("rt-sa", "Failed")
    assert condition(failed, "Provisioned")["reason"] == "SeedNotFound"
    message = condition(failed, "Provisioned")["message"]
    assert "ap-southeast-1" in message
    assert "eu-central-1, eu-west-1" in message  # the default aws seeds' regions
    assert await gardener.get_shoot("shoot-sa") is None
    assert simulator.requests["PATCH shoots"] == 0
    # bound to a region with one: created on that seed, its region in the provisioning info
    placed = runtime("rt-sb", world.namespace, shoot="shoot-sb")
    placed["spec"]["shoot"]["enforceSeedLocation"] = True
    simulator.refuse_seed_reads(503, 1000)  # first the Seeds cannot be listed: asked again
    await world.kcp.apply(placed)
    waiting = await provisioned(world, "rt-sb", "GardenerErr", "Failed to verify whether seed")
    assert waiting["status"]["state"] == "Pending"
    simulator.refuse_seed_reads(503, 0)
    await world.state("rt-sb", "Ready")
    shoot = await gardener.get_shoot("shoot-sb")
    assert shoot is not None
    assert shoot["spec"]["seedName"] == "aws-eu1"
    async with world.shoot_cluster() as cluster:
        info = await cluster.client.request(
            "GET", "/api/v1/namespaces/kyma-system/configmaps/kyma-provisioning-info"
        )
    details = yaml.safe_load(info["data"]["details"])
    assert (details["runtimeID"], details["seedRegion"]) == ("rt-sb", "eu-central-1")
    # a Shoot Gardener cannot place (no usable seed of its provider): Failed, not retried
    try:
        for name, region in (("aws-eu1", "eu-central-1"), ("aws-eu2", "eu-west-1")):
            await simulator.put_seed(seed(name, "aws", region, ready=False))
        await world.kcp.apply(runtime("rt-sc", world.namespace, shoot="shoot-sc"))
        failed = await world.state("rt-sc", "Failed")
    finally:
        await simulator.reset_seeds()
    assert condition(failed, "Provisioned")["reason"] == "CreationErr"
    assert condition(failed, "Provisioned")["message"] == "Shoot creation failed, no matching seeds"
    assert "matching provider" in failed["status"]["shootLastOperation"]["description"]

    # create, Gardener's admission refuses the Shoot (422): KIM retries any refused creation
    simulator.refuse_writes(422, 1000)
    await world.kcp.apply(runtime("rt-v", world.namespace, shoot="shoot-v"))
    refused = await provisioned(world, "rt-v", "GardenerErr", "422")
    assert refused["status"]["state"] == "Pending"
    simulator.refuse_writes(422, 0)
    # create, Gardener fails it with a configuration problem: Pending, Unknown, retried
    simulator.faults["shoot-q"] = "error"
    body = runtime("rt-q", world.namespace, shoot="shoot-q")
    await world.kcp.apply(body)
    live = await provisioned(world, "rt-q", "Pending", "ERR_CONFIGURATION_PROBLEM")
    assert live["status"]["state"] == "Pending"
    assert condition(live, "Provisioned")["status"] == "Unknown"
    assert (
        "Retryable gardener errors during cluster provisioning"
        in (condition(live, "Provisioned")["message"])
    )
    await world.state("rt-v", "Ready")  # the refused creation went through once allowed
    await gardener.annotate("shoot-q", {FAULT: None})  # type: ignore[dict-item]
    ready = await world.state("rt-q", "Ready")
    assert condition(ready, "Provisioned")["reason"] == "ShootCreationCompleted"

    # update, Gardener's reconcile fails with each class KIM retries: Pending, never Failed
    for maximum, code in (
        (4, "ERR_INFRA_RATE_LIMITS_EXCEEDED"),
        (5, "ERR_INFRA_QUOTA_EXCEEDED"),
        (6, "ERR_PROBLEMATIC_WEBHOOK"),
        (7, "ERR_INFRA_DEPENDENCIES"),
    ):
        await gardener.annotate("shoot-q", {FAULT: f"Failed:{code}"})
        body["spec"]["shoot"]["provider"]["workers"] = [worker(maximum=maximum)]
        await world.kcp.apply(body)
        live = await provisioned(world, "rt-q", "Pending", code)
        assert live["status"]["state"] == "Pending", code
        provisioned_now = condition(live, "Provisioned")
        assert provisioned_now["status"] == "Unknown"
        assert "Retryable gardener errors during cluster reconcile" in provisioned_now["message"]
    await gardener.annotate("shoot-q", {FAULT: None})  # type: ignore[dict-item]
    await provisioned(world, "rt-q", "ConfigurationCompleted", "")
    await world.state("rt-q", "Ready")

    # update refused with a conflict: retried (Pending, Unknown, Processing)
    simulator.refuse_writes(409, 1000)
    body["spec"]["shoot"]["provider"]["workers"] = [worker(maximum=8)]
    await world.kcp.apply(body)
    live = await provisioned(world, "rt-q", "Processing", "conflict")
    assert (live["status"]["state"], condition(live, "Provisioned")["status"]) == (
        "Pending",
        "Unknown",
    )
    simulator.refuse_writes(409, 0)
    await world.state("rt-q", "Ready")

    # update refused as invalid (422): KIM fails the Runtime (the broker fails its update)
    simulator.refuse_writes(422, 1)
    body["spec"]["shoot"]["provider"]["workers"] = [worker(maximum=9)]
    await world.kcp.apply(body)
    failed = await world.state("rt-q", "Failed")
    assert condition(failed, "Provisioned")["reason"] == "ProcessingErr"
    assert "422" in condition(failed, "Provisioned")["message"]
    # the next change Gardener accepts makes it Ready again
    body["spec"]["shoot"]["provider"]["workers"] = [worker(maximum=10)]
    await world.kcp.apply(body)
    await world.state("rt-q", "Ready")
    shoot = await gardener.get_shoot("shoot-q")
    assert shoot is not None
    assert shoot["spec"]["provider"]["workers"][0]["maximum"] == 10


def kim_binding(user: str, *, kim: bool = True) -> dict[str, Any]:
    """A binding as KIM creates it (generated name, KIM's label), or someone else's."""
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "generateName": "admin-",
            "labels": dict(BINDING_LABELS) if kim else {"team": "ops"},
        },
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": RBAC, "kind": "User", "name": user}],
    }


def kim_oidc(index: int) -> dict[str, Any]:
    return {
        "apiVersion": "authentication.gardener.cloud/v1alpha1",
        "kind": "OpenIDConnect",
        "metadata": {"name": f"kyma-oidc-{index}", "labels": dict(OIDC_LABELS)},
        "spec": {"issuerURL": f"https://old-{index}.example.com", "clientID": "old"},
    }


async def test_a_shoot_kim_configured_is_taken_over_with_kims_names_labels_and_objects(
    world: World,
) -> None:
    simulator, gardener = world.garden.simulator, world.garden.gardener
    body = runtime(
        "rt-t", world.namespace, shoot="shoot-t", administrators=("admin@x.io", "new@x.io")
    )
    body["metadata"]["labels"] |= {
        "kyma-project.io/instance-id": "inst-1",
        "kyma-project.io/platform-region": "stale",  # KIM takes the regions from the spec
    }
    # the world as KIM left it: its Shoot (with a domain) written for generation 1 of the
    # Runtime, its administrators' bindings and its OIDC objects in the shoot
    kim_shoot = shoot_for(body, gardener.namespace, CONVERTER)
    kim_shoot["metadata"]["annotations"][SHOOT_GENERATION] = "1"
    kim_shoot["spec"].setdefault("dns", {}).setdefault("domain", "shoot-t.kyma.example.com")
    kim_shoot["spec"]["provider"].setdefault("infrastructureConfig", {"kind": "Infra"})
    spec = RuntimeSpec.model_validate(body["spec"])
    await gardener.apply_configmap(structured_auth_configmap(spec, gardener.namespace, CONVERTER))
    await gardener.apply_shoot(kim_shoot)

    async def created() -> bool:
        shoot = await gardener.get_shoot("shoot-t")
        last = ((shoot or {}).get("status") or {}).get("lastOperation") or {}
        return last.get("state") == "Succeeded"

    await poll_until(created, timeout=60, what="KIM's Shoot created")
    async with world.shoot_cluster() as cluster:
        for user in ("admin@x.io", "removed@x.io"):
            await cluster.client.request(
                "POST", f"/apis/{RBAC}/v1/clusterrolebindings", body=kim_binding(user)
            )
        await cluster.client.request(
            "POST",
            f"/apis/{RBAC}/v1/clusterrolebindings",
            body=kim_binding("other@x.io", kim=False),
        )
        for index in (0, 1):
            await cluster.apply(kim_oidc(index))

    await world.kcp.apply(body)
    ready = await world.state("rt-t", "Ready")
    assert simulator.requests["PATCH shoots"] == 1  # ours: KIM's generation was current

    # conditions, as KIM reports them
    reasons = {c["type"]: (c["status"], c["reason"]) for c in ready["status"]["conditions"]}
    assert reasons == {
        "Provisioned": ("True", "ShootCreationCompleted"),
        "KubeconfigReady": ("True", "GardenerClusterCRReady"),
        "KymaSystemNSCreated": ("True", "KymaSystemNSReady"),
        "OidcAndConfigMapConfigured": ("True", "OidcAndConfigMapsConfigured"),
        "Configured": ("True", "AdministratorsConfigured"),
    }

    # the GardenerCluster and the Secret: named after the runtime id, KIM's labels
    cluster_body = await world.kcp.get(
        {
            "apiVersion": API_VERSION,
            "kind": "GardenerCluster",
            "metadata": {"name": "rt-t", "namespace": world.namespace},
        }
    )
    assert cluster_body is not None
    gardener_cluster = cluster_body.raw
    domain = kim_shoot["spec"]["dns"]["domain"]
    assert gardener_cluster["metadata"]["annotations"]["skr-domain"] == domain
    assert gardener_cluster["status"]["state"] == "Ready"
    assert gardener_cluster["status"]["conditions"][0]["type"] == "KubeconfigManagement"
    secret = await world.kcp.get(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "kubeconfig-rt-t", "namespace": world.namespace},
        }
    )
    assert secret is not None
    labels = secret.raw["metadata"]["labels"]
    for each in (labels, gardener_cluster["metadata"]["labels"]):
        assert each["operator.kyma-project.io/internal"] == "true"
        assert each["kyma-project.io/platform-region"] == "cf-eu10"
        assert each["kyma-project.io/region"] == "eu-central-1"
        assert each["kyma-project.io/instance-id"] == "inst-1"
        assert (each[RUNTIME_ID], each[KYMA_NAME], each[SHOOT_NAME]) == ("rt-t", "rt-t", "shoot-t")
        assert each[MANAGED_BY] == "infrastructure-manager"
    assert labels[CLUSTER_NAME] == "rt-t"

    async with world.shoot_cluster() as cluster:
        # administrators: KIM's binding of a kept one adopted, a removed one's gone, no duplicate
        listing = await cluster.client.request("GET", f"/apis/{RBAC}/v1/clusterrolebindings")
        admins: dict[str, list[str]] = {}
        for item in listing["items"]:
            if (item.get("roleRef") or {}).get("name") != "cluster-admin":
                continue
            for subject in item.get("subjects") or []:
                admins.setdefault(subject["name"], []).append(item["metadata"]["name"])
        assert len(admins["admin@x.io"]) == 1
        assert len(admins["new@x.io"]) == 1
        assert "removed@x.io" not in admins
        assert len(admins["other@x.io"]) == 1  # not KIM's: never touched
        # OIDC: KIM's kyma-oidc-0 adopted with the Runtime's provider, the surplus one gone
        oidc = await cluster.client.request(
            "GET", "/apis/authentication.gardener.cloud/v1alpha1/openidconnects"
        )
        specs = {item["metadata"]["name"]: item["spec"] for item in oidc["items"]}
        assert list(specs) == ["kyma-oidc-0"]
        assert specs["kyma-oidc-0"]["issuerURL"] == "https://issuer.example.com"
        assert specs["kyma-oidc-0"]["supportedSigningAlgs"] == ["RS256"]
        # kyma-system and the provisioning info
        info = await cluster.client.request(
            "GET", "/api/v1/namespaces/kyma-system/configmaps/kyma-provisioning-info"
        )
        details = yaml.safe_load(info["data"]["details"])
        assert details["runtimeID"] == "rt-t"
        assert details["globalAccountID"] == "ga-1"
        assert details["platformRegion"] == "cf-eu10"
        infrastructure = kim_shoot["spec"]["provider"]["infrastructureConfig"]
        assert details["infrastructureConfig"] == infrastructure
        assert details["workerPools"]["kyma"]["machineType"] == "m6i.large"

    assert world.manager is not None
    registry = world.manager.metrics.registry
    state = registry.get_sample_value(
        "infrastructure_manager_im_runtime_state",
        {
            "runtimeId": "rt-t",
            "runtimeName": "rt-t",
            "shoot": "shoot-t",
            "provider": "aws",
            "state": "Ready",
            "message": "Cluster admin configuration completed",
        },
    )
    assert state == 1
    kubeconfig = base64.b64decode(secret.raw["data"]["config"]).decode()
    assert "current-context" in kubeconfig
