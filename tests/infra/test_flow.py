"""A Runtime through the whole state machine against the simulated Gardener and a real shoot
apiserver: created, patched once per change, deleted; Gardener's errors; a killed manager."""

from __future__ import annotations

import base64
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.infra.gardener import SHOOT_API_VERSION, GardenerError
from reconciler.infra.kubeconfigs import secret_name
from reconciler.infra.states import binding_name
from reconciler.kube.client import KubeClient
from reconciler.kube.cluster import Cluster
from reconciler.model.infrastructure import (
    API_VERSION,
    FINALIZER,
    KYMA_NAME,
    MANAGED_BY,
    RUNTIME_ID,
    SHOOT_NAME,
)
from reconciler.util.polling import poll_until
from tests.infra.conftest import World
from tests.infra.samples import runtime, worker

BROKER_RUNTIME = Path(__file__).parent / "fixtures" / "broker-runtime.yaml"
ADMINS = ("admin@example.com", "ops@example.com")


async def secret(world: World, name: str) -> dict[str, Any] | None:
    live = await world.kcp.get(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": secret_name(name), "namespace": world.namespace},
        }
    )
    return None if live is None else live.raw


def kubeconfig_of(body: dict[str, Any]) -> str:
    return base64.b64decode(body["data"]["config"]).decode()


async def shoot_names(world: World) -> list[str]:
    gardener = world.garden.gardener
    listing = await gardener.client.request("GET", gardener._path())
    return [item["metadata"]["name"] for item in listing["items"]]


KCP_ACL = ["192.168.1.0/24", "172.16.0.1/32"]


async def apply_acl_configmap(world: World) -> None:
    """The operators' and the control plane's addresses, as KIM's ACL ConfigMap holds them."""
    data = {"acl-list.json": f'["{KCP_ACL[0]}"]', "kcp-external-nat-ip.json": f'"{KCP_ACL[1]}"'}
    meta = {"name": "kcp-acl", "namespace": world.namespace}
    await world.kcp.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data})


def acl_cidrs(shoot: dict[str, Any]) -> list[str]:
    """The CIDRs of the Shoot's one enabled `acl` extension."""
    (extension,) = [e for e in shoot["spec"]["extensions"] if e["type"] == "acl"]
    assert extension["disabled"] is False
    rule = extension["providerConfig"]["rule"]
    assert (rule["action"], rule["type"]) == ("ALLOW", "remote_ip")
    return list(rule["cidrs"])


async def test_a_runtime_becomes_a_ready_shoot_is_patched_once_per_change_and_deleted(
    world: World,
) -> None:
    body = runtime("rt-a", world.namespace, shoot="shoot-a", administrators=ADMINS)
    await world.kcp.apply(body)
    ready = await world.state("rt-a", "Ready")
    assert FINALIZER in ready["metadata"]["finalizers"]
    conditions = {c["type"]: c["status"] for c in ready["status"]["conditions"]}
    assert conditions == {
        "Provisioned": "True",
        "KubeconfigReady": "True",
        "KymaSystemNSCreated": "True",
        "OidcAndConfigMapConfigured": "True",
        "Configured": "True",
    }
    assert ready["status"]["provisioningCompleted"] is True

    kubeconfig_secret = await secret(world, "rt-a")
    assert kubeconfig_secret is not None
    labels = kubeconfig_secret["metadata"]["labels"]
    assert labels[KYMA_NAME] == "rt-a"
    assert labels[RUNTIME_ID] == "rt-a"
    assert labels[SHOOT_NAME] == "shoot-a"
    assert labels[MANAGED_BY] == "infrastructure-manager"
    assert labels["kyma-project.io/global-account-id"] == "ga-1"
    async with await Cluster.connect(kubeconfig_of(kubeconfig_secret), text=True) as shoot:
        for admin in ADMINS:  # a real request against the shoot apiserver
            binding = await shoot.get(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": binding_name(admin)},
                }
            )
            assert binding is not None
            assert binding.raw["subjects"][0]["name"] == admin
        oidc = await shoot.get(
            {
                "apiVersion": "authentication.gardener.cloud/v1alpha1",
                "kind": "OpenIDConnect",
                "metadata": {"name": "kyma-oidc-0"},
            }
        )
        assert oidc is not None
        assert oidc.raw["spec"]["issuerURL"] == "https://issuer.example.com"
    cluster = await world.kcp.get(
        {
            "apiVersion": API_VERSION,
            "kind": "GardenerCluster",
            "metadata": {"name": "rt-a", "namespace": world.namespace},
        }
    )
    assert cluster is not None
    assert cluster.raw["spec"]["kubeconfig"]["secret"]["name"] == "kubeconfig-rt-a"

    patches = world.garden.simulator.requests["PATCH shoots"]
    acl = {"allowedCIDRs": ["10.0.0.1/32"]}  # KIM fails the Runtime without its ConfigMap
    body["spec"]["shoot"]["kubernetes"]["kubeAPIServer"]["acl"] = acl
    await world.kcp.apply(body)
    failed = await world.state("rt-a", "Failed")
    message = f"ACL ConfigMap {world.namespace}/kcp-acl not found"
    assert [c["message"] for c in failed["status"]["conditions"] if c["type"] == "Provisioned"] == [
        message
    ]
    await apply_acl_configmap(world)
    body["spec"]["shoot"]["provider"]["workers"] = [worker(maximum=7)]
    body["spec"]["security"]["administrators"] = ["admin@example.com"]
    await world.kcp.apply(body)

    async def patched() -> bool:
        shoot = await world.garden.gardener.get_shoot("shoot-a")
        runtime_now = await world.runtime("rt-a")
        assert shoot is not None
        assert runtime_now is not None
        return (
            shoot["spec"]["provider"]["workers"][0]["maximum"] == 7
            and runtime_now["status"]["state"] == "Ready"
            and all(
                c.get("observedGeneration") == runtime_now["metadata"]["generation"]
                for c in runtime_now["status"]["conditions"]
            )
        )

    await poll_until(patched, timeout=60, what="Shoot patched and Runtime Ready again")
    assert world.garden.simulator.requests["PATCH shoots"] == patches + 1
    shoot_now = await world.garden.gardener.get_shoot("shoot-a")
    assert shoot_now is not None
    assert acl_cidrs(shoot_now) == ["10.0.0.1/32", *KCP_ACL]  # the Runtime's gained ACL
    async with await Cluster.connect(kubeconfig_of(kubeconfig_secret), text=True) as shoot:
        gone = await shoot.get(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": binding_name("ops@example.com")},
            }
        )
        assert gone is None

    auth = {  # the Shoot's structured authentication, in the project
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "structured-auth-config-shoot-a",
            "namespace": world.garden.gardener.namespace,
        },
    }
    assert await world.kcp.get(auth) is not None
    await world.kcp.delete(body)

    async def deleted() -> bool:
        return (
            await world.runtime("rt-a") is None
            and await secret(world, "rt-a") is None
            and "shoot-a" not in await shoot_names(world)
            and await world.kcp.get(auth) is None
        )

    await poll_until(deleted, timeout=60, what="Runtime, kubeconfig, Shoot, its ConfigMap gone")


async def test_a_runtime_as_the_broker_writes_it_is_stored_whole_provisioned_and_never_downgraded(
    world: World,
) -> None:
    """Every field the current broker writes (`oidcConfig: {}`, an empty machine image, the ACL,
    dual stack, the caches, ...) is stored as sent and becomes a Shoot the stricter simulator
    accepts, the configured defaults filling in (the ACL becomes KIM's extension). After
    Gardener auto-updates Kubernetes and the machine image and reorders zones, the next Runtime
    change keeps them (a downgrade would be refused). A Runtime without the labels KIM requires
    fails, nothing sent."""
    body = yaml.safe_load(BROKER_RUNTIME.read_text())
    body["metadata"].update({"name": "rt-broker", "namespace": world.namespace})
    await apply_acl_configmap(world)
    await world.kcp.apply(body)
    unlabelled = runtime("rt-nolabel", world.namespace, shoot="shoot-nolabel")
    del unlabelled["metadata"]["labels"]["kyma-project.io/instance-id"]
    await world.kcp.apply(unlabelled)

    await world.state("rt-broker", "Ready")
    stored = await world.runtime("rt-broker")
    assert stored is not None
    assert stored["spec"] == body["spec"]
    assert stored["status"]["shootLastOperation"]["state"] == "Succeeded"  # Gardener's, as KIM
    shoot = await world.garden.gardener.get_shoot("c-broker")
    assert shoot is not None
    assert shoot["spec"]["kubernetes"]["version"] == "1.33"
    image = shoot["spec"]["provider"]["workers"][0]["machine"]["image"]
    assert image == {"name": "gardenlinux", "version": "1592.1.0"}  # the configured default
    assert shoot["spec"]["dns"]["domain"] == "c-broker.dev.kyma.example.com"
    assert acl_cidrs(shoot) == ["10.0.0.0/8", *KCP_ACL]  # the broker's ACL, as KIM extends it

    failed = await world.state("rt-nolabel", "Failed")
    provisioned = next(c for c in failed["status"]["conditions"] if c["type"] == "Provisioned")
    assert provisioned["reason"] == "ConversionErr"
    assert "kyma-project.io/instance-id" in provisioned["message"]
    assert await world.garden.gardener.get_shoot("shoot-nolabel") is None

    # Gardener's maintenance: higher versions, its own zone order
    workers = shoot["spec"]["provider"]["workers"]
    workers[0]["machine"]["image"]["version"] = "1592.9.0"
    workers[0]["zones"] = ["eu-central-1c", "eu-central-1a", "eu-central-1b"]
    upgrade = {
        "apiVersion": SHOOT_API_VERSION,
        "kind": "Shoot",
        "metadata": {"name": "c-broker", "namespace": world.garden.gardener.namespace},
        "spec": {"kubernetes": {"version": "1.33.9"}, "provider": {"workers": workers}},
    }
    await world.kcp.apply(upgrade, field_manager="gardener")
    body["spec"]["shoot"]["provider"]["workers"][0]["maximum"] = 25
    await world.kcp.apply(body)

    async def updated() -> dict[str, Any] | None:
        live = await world.garden.gardener.get_shoot("c-broker")
        pools = ((live or {}).get("spec") or {}).get("provider", {}).get("workers") or []
        return live if pools and pools[0]["maximum"] == 25 else None

    shoot = await poll_until(updated, timeout=60, what="the Shoot updated")
    assert shoot["spec"]["kubernetes"]["version"] == "1.33.9"
    pool = shoot["spec"]["provider"]["workers"][0]
    assert pool["machine"]["image"]["version"] == "1592.9.0"
    assert pool["zones"] == ["eu-central-1c", "eu-central-1a", "eu-central-1b"]
    await world.state("rt-broker", "Ready")


async def test_a_final_gardener_error_fails_the_runtime_with_the_reason(world: World) -> None:
    """Final as KIM reads it: the project's credentials are refused."""
    world.garden.simulator.faults["shoot-f"] = "Failed:ERR_INFRA_UNAUTHORIZED"
    await world.kcp.apply(runtime("rt-f", world.namespace, shoot="shoot-f"))
    failed = await world.state("rt-f", "Failed")
    provisioned = next(c for c in failed["status"]["conditions"] if c["type"] == "Provisioned")
    assert (provisioned["status"], provisioned["reason"]) == ("False", "CreationErr")
    assert "ERR_INFRA_UNAUTHORIZED" in provisioned["message"]


async def test_a_manager_killed_mid_flow_resumes_and_never_creates_a_second_shoot(
    world: World,
) -> None:
    await world.kcp.apply(runtime("rt-k", world.namespace, shoot="shoot-k"))

    async def created() -> dict[str, Any] | None:
        return await world.garden.gardener.get_shoot("shoot-k")

    first = await poll_until(created, timeout=60, what="Shoot shoot-k created")
    await world.stop()
    await world.start()
    await world.state("rt-k", "Ready")
    assert await shoot_names(world) == ["shoot-k"]
    again = await world.garden.gardener.get_shoot("shoot-k")
    assert again is not None
    assert again["metadata"]["uid"] == first["metadata"]["uid"]


async def test_kubeconfigs_rotate_as_kim_times_them_and_on_the_force_annotation(
    world: World,
) -> None:
    await world.kcp.apply(runtime("rt-r", world.namespace, shoot="shoot-r"))
    await world.state("rt-r", "Ready")
    first = await secret(world, "rt-r")
    assert first is not None

    async def rotated_from(old: dict[str, Any]) -> dict[str, Any] | None:
        now = await secret(world, "rt-r")
        return now if now and now["data"] != old["data"] else None

    async def poke(value: str) -> None:  # any change of the Runtime makes the manager look
        await world.kcp.client.request(
            "PATCH",
            f"/apis/{API_VERSION}/namespaces/{world.namespace}/runtimes/rt-r",
            body={"metadata": {"annotations": {"test/poke": value}}},
            content_type="application/merge-patch+json",
        )

    world.clock.offset = dt.timedelta(seconds=3600 * 0.5)
    await poke("1")
    await world.state("rt-r", "Ready")
    assert (await secret(world, "rt-r") or {})["data"] == first["data"]  # 50 %: not yet

    world.clock.offset = dt.timedelta(seconds=3600 * 0.58)  # past 95 % of 60 %: 57 %
    await poke("2")
    second = await poll_until(lambda: rotated_from(first), timeout=60, what="rotation at 58 %")
    for kubeconfig in (kubeconfig_of(first), kubeconfig_of(second)):  # the old one still works
        async with KubeClient.from_kubeconfig(kubeconfig, text=True) as client:
            await client.request("GET", "/api/v1/namespaces")

    await world.kcp.client.request(
        "PATCH",
        f"/apis/{API_VERSION}/namespaces/{world.namespace}/gardenerclusters/rt-r",
        body={
            "metadata": {
                "annotations": {"operator.kyma-project.io/force-kubeconfig-rotation": "true"}
            }
        },
        content_type="application/merge-patch+json",
    )
    third = await poll_until(lambda: rotated_from(second), timeout=60, what="forced rotation")

    await world.kcp.client.request(  # someone empties the Secret: it is written anew
        "PATCH",
        f"/api/v1/namespaces/{world.namespace}/secrets/{secret_name('rt-r')}",
        body={"data": {"config": None}},
        content_type="application/merge-patch+json",
    )
    await poke("3")

    async def rewritten() -> dict[str, Any] | None:
        now = await secret(world, "rt-r")
        return now if now and (now.get("data") or {}).get("config") else None

    fourth = await poll_until(rewritten, timeout=60, what="an emptied Secret rewritten")
    assert fourth["data"] != third["data"]


async def test_deleting_a_failed_runtime_reports_terminating_until_it_is_gone(
    world: World,
) -> None:
    """Failed is no end state for a deletion: the Shoot is deleted as for any other state."""
    world.garden.simulator.faults["shoot-fd"] = "Failed:ERR_INFRA_UNAUTHENTICATED"
    body = runtime("rt-fd", world.namespace, shoot="shoot-fd")
    await world.kcp.apply(body)
    await world.state("rt-fd", "Failed")

    await world.kcp.delete(body)
    terminating = await world.state("rt-fd", "Terminating")
    deprovisioned = next(
        c for c in terminating["status"]["conditions"] if c["type"] == "Deprovisioned"
    )
    assert "shoot-fd" in deprovisioned["message"]

    async def deleted() -> bool:
        return await world.runtime("rt-fd") is None and "shoot-fd" not in await shoot_names(world)

    await poll_until(deleted, timeout=60, what="Runtime and Shoot gone")


HOLD = "test.reconciler.kyma-project.io/hold"


async def release(world: World, body: dict[str, Any]) -> None:
    """Drop the test's own finalizer; the Runtime then goes."""
    live = await world.runtime(body["metadata"]["name"])
    assert live is not None
    patch = {"metadata": {"finalizers": [f for f in live["metadata"]["finalizers"] if f != HOLD]}}
    path = f"/apis/{API_VERSION}/namespaces/{world.namespace}/runtimes/{live['metadata']['name']}"
    await world.kcp.client.request(
        "PATCH", path, body=patch, content_type="application/merge-patch+json"
    )

    async def gone() -> bool:
        return await world.runtime(body["metadata"]["name"]) is None

    await poll_until(gone, timeout=60, what="Runtime gone")


async def test_deleting_a_runtime_whose_shoot_gardener_refused_reports_terminating(
    world: World,
) -> None:
    """Pending before any Shoot existed (Gardener refuses to create it; KIM retries a refused
    creation): the deletion reports Terminating all the same, here seen while another
    finalizer holds the Runtime."""
    # a DNS label the CRD accepts, but too long with the project's name for Gardener
    body = runtime("rt-fn", world.namespace, shoot="shoot-name-beyond-gardeners-limit")
    body["metadata"]["finalizers"] = [HOLD]
    await world.kcp.apply(body)
    pending = await world.state("rt-fn", "Pending")

    async def refused() -> bool:
        live = await world.runtime("rt-fn") or pending
        conditions = (live.get("status") or {}).get("conditions") or []
        return any(c["reason"] == "GardenerErr" and "403" in c["message"] for c in conditions)

    await poll_until(refused, timeout=60, what="Gardener's refusal reported")

    await world.kcp.delete(body)

    async def released() -> dict[str, Any] | None:
        live = await world.runtime("rt-fn")
        assert live is not None
        return live if FINALIZER not in live["metadata"]["finalizers"] else None

    live = await poll_until(released, timeout=60, what="our finalizer removed")
    assert live["status"]["state"] == "Terminating", live["status"]
    await release(world, body)


async def test_a_final_gardener_error_while_deleting_is_retried_as_terminating(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failed would stop the machine (no requeue) with our finalizer and the Shoot left."""
    body = runtime("rt-fg", world.namespace, shoot="shoot-fg")
    await world.kcp.apply(body)
    await world.state("rt-fg", "Ready")
    assert world.manager is not None
    gardener = world.manager.gardener
    delete_shoot = gardener.delete_shoot
    refusals = [GardenerError("Gardener refused to delete Shoot shoot-fg", retryable=False)]

    async def refusing(name: str) -> bool:
        if refusals:
            raise refusals.pop()
        return await delete_shoot(name)

    monkeypatch.setattr(gardener, "delete_shoot", refusing)
    await world.kcp.delete(body)
    terminating = await world.state("rt-fg", "Terminating")
    deprovisioned = next(
        c for c in terminating["status"]["conditions"] if c["type"] == "Deprovisioned"
    )
    assert "refused to delete Shoot shoot-fg" in deprovisioned["message"]

    async def deleted() -> bool:
        return await world.runtime("rt-fg") is None and "shoot-fg" not in await shoot_names(world)

    await poll_until(deleted, timeout=60, what="Runtime and Shoot gone after the retry")
