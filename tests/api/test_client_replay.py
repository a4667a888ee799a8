"""The environment broker (KEB) and the KCP CLI, replayed as their code calls the API, over a
real TLS connection with a client certificate and no bearer token (the broker's identity came
from the mesh's mutual TLS): provisioning, update, re-post after an error, deprovisioning and
re-provisioning, then the CLI's commands. Bodies are what Go's `json.Marshal` produces (`null`
for empty lists, the contract's field names) sent without Content-Type, and every answer is
checked the way the clients' code reads it: the status codes they accept, the types their
structs decode (a string where Go expects int64 fails the decode) and the status enum."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from reconciler.api import ApiSettings
from reconciler.model.cluster import ClusterState
from reconciler.model.operation import Operation
from reconciler.mothership.invoker import CallableInvoker, Invoker, InvokeResult
from reconciler.mothership.planner import Planner
from reconciler.util.polling import poll_until
from tests.api.pki import TestCa
from tests.api.serving import served_api

KEB = "spiffe://cluster.local/ns/kcp-system/sa/kcp-kyma-environment-broker"
STATUSES = {  # reconcilerApi.Status as the broker's contract declares it
    "reconcile_pending",
    "reconcile_disabled",
    "reconciling",
    "ready",
    "error",
    "delete_pending",
    "deleting",
    "delete_error",
    "deleted",
}
RUNTIME = "a1b2c3d4-0000-4000-8000-000000000001"


def go_marshal(value: Any) -> bytes:
    """What `json.Marshal` sends: compact, no trailing newline."""
    return json.dumps(value, separators=(",", ":")).encode()


def keb_cluster(*components: str, administrators: list[str] | None = None) -> dict[str, Any]:
    """contract.Cluster as the broker fills it: nil slices marshal as null."""
    return {
        "kubeconfig": "apiVersion: v1\nkind: Config\n",
        "kymaConfig": {
            "administrators": administrators,  # nil for most plans
            "components": [
                {
                    "URL": f"https://charts.example/{name}.tgz",
                    "component": name,
                    "configuration": None,  # no overrides for this component
                    "namespace": "kyma-system",
                    "version": "",
                }
                for name in components
            ],
            "profile": "Evaluation",
            "version": "2.4.0",
        },
        "metadata": {
            "globalAccountID": "ga-1",
            "instanceID": "inst-1",
            "region": "westeurope",
            "serviceID": "47c9dcbf-ff30-448e-ab36-d3bad66ba281",
            "servicePlanID": "4deee563-e5ec-4731-b9b1-53b42d855f0c",
            "servicePlanName": "azure",
            "shootName": "c-1a2b3c",
            "subAccountID": "sa-1",
        },
        "runtimeID": RUNTIME,
        "runtimeInput": {"description": "", "name": "my-runtime"},
    }


def http_cluster_response(response: httpx.Response) -> dict[str, Any]:
    """reconcilerApi.HTTPClusterResponse, decoded as Go would (or the test fails)."""
    body = response.json()
    assert isinstance(body, dict), body
    assert isinstance(body["cluster"], str)
    assert isinstance(body["clusterVersion"], int)
    assert isinstance(body["configurationVersion"], int)
    assert body["status"] in STATUSES, body["status"]
    assert isinstance(body["statusURL"], str)
    assert body["statusURL"].startswith("https://")
    failures = body.get("failures")
    assert failures is None or isinstance(failures, list)
    for failure in failures or ():
        assert isinstance(failure["component"], str)
        assert isinstance(failure["reason"], str)
    return body


def status_changes(response: httpx.Response) -> list[dict[str, Any]]:
    """[]*reconcilerApi.StatusChange: a bare array (GetStatusChange decodes it so)."""
    assert response.status_code == 200, response.text
    body = response.json()
    assert isinstance(body, list), body
    for change in body:
        assert isinstance(change["started"], str)
        assert isinstance(change["duration"], int)
        assert change["status"] in STATUSES
    return body


class Broker:
    """The calls of the broker's reconciler client, with its status-code handling."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def apply_cluster_config(self, cluster: dict[str, Any]) -> dict[str, Any]:
        response = await self.client.post("/v1/clusters", content=go_marshal(cluster))
        assert "content-type" not in response.request.headers
        assert response.status_code in (200, 201), response.text  # 4xx: permanent failure
        return http_cluster_response(response)

    async def delete_cluster(self, runtime_id: str) -> None:
        response = await self.client.delete(f"/v1/clusters/{runtime_id}")
        assert response.status_code < 400 or response.status_code == 404, response.text

    async def get_cluster(self, runtime_id: str, config_version: int) -> dict[str, Any]:
        path = f"/v1/clusters/{runtime_id}/configs/{config_version}/status"
        response = await self.client.get(path)
        assert response.status_code == 200, response.text
        return http_cluster_response(response)

    async def get_latest_cluster(self, runtime_id: str) -> dict[str, Any]:
        response = await self.client.get(f"/v1/clusters/{runtime_id}/status")
        assert response.status_code == 200, response.text
        return http_cluster_response(response)

    async def get_status_change(self, runtime_id: str, offset: str) -> list[dict[str, Any]]:
        return status_changes(
            await self.client.get(f"/v1/clusters/{runtime_id}/statusChanges/{offset}")
        )

    async def until(self, runtime_id: str, version: int, status: str) -> dict[str, Any]:
        async def reached() -> dict[str, Any] | None:
            state = await self.get_cluster(runtime_id, version)
            return state if state["status"] == status else None

        return await poll_until(reached, timeout=30, what=f"{runtime_id} v{version} {status}")


def breakable(broken: set[str]) -> Callable[[Planner], Invoker]:
    def factory(_planner: Planner) -> Invoker:
        async def invoke(op: Operation, _state: ClusterState) -> InvokeResult:
            if op.component in broken:
                return InvokeResult(False, f"component {op.component}: installation failed")
            return InvokeResult(True)

        return CallableInvoker(invoke)

    return factory


async def test_broker_and_kcp_cli_flows_work_unchanged_with_a_client_certificate(
    tmp_path: Path,
) -> None:
    ca = TestCa(tmp_path / "pki")
    settings = ApiSettings(
        client_ca_file=ca.file,
        client_identities={KEB: "admin", "kcp-cli": "operator"},
        public_url="https://reconciler.kcp.example",
    )
    broken: set[str] = set()
    async with served_api(tmp_path, ca, settings, invoker=breakable(broken)) as served:
        keb_client = served.client(ca.client("kcp-kyma-environment-broker", KEB))
        cli_client = served.client(ca.client("kcp-cli"))
        async with keb_client as keb_http, cli_client as cli:
            keb = Broker(keb_http)
            # provisioning: register, then poll the statusURL's version until ready
            created = await keb.apply_cluster_config(keb_cluster("cluster-essentials", "istio"))
            assert (created["cluster"], created["configurationVersion"]) == (RUNTIME, 1)
            assert created["status"] == "reconcile_pending"
            assert created["statusURL"] == (
                f"https://reconciler.kcp.example/v1/clusters/{RUNTIME}/configs/1/status"
            )
            await keb.until(RUNTIME, 1, "ready")
            changes = await keb.get_status_change(RUNTIME, "1h")
            assert [c["status"] for c in changes] == ["ready", "reconciling", "reconcile_pending"]

            # update (upgrade adds a component, administrators given); it fails
            broken.add("serverless")
            update = keb_cluster(
                "cluster-essentials", "istio", "serverless", administrators=["a@example.com"]
            )
            updated = await keb.apply_cluster_config(update)
            assert updated["configurationVersion"] == 2
            failed = await keb.until(RUNTIME, 2, "error")
            assert [f["component"] for f in failed["failures"]] == ["serverless"]
            assert (await keb.get_cluster(RUNTIME, 1))["status"] == "ready"  # v1's own status

            # the broker retries a cluster in error by re-posting it unchanged
            broken.clear()
            reposted = await keb.apply_cluster_config(update)
            assert (reposted["configurationVersion"], reposted["status"]) == (
                2,
                "reconcile_pending",
            )
            await keb.until(RUNTIME, 2, "ready")

            # KCP CLI: list, info, disable, enable, purge (operator), state
            listed = (await cli.get("/v1/reconciliations", params={"runtimeID": RUNTIME})).json()
            assert [r["status"] for r in listed] == ["ready", "error", "ready"]
            assert all(isinstance(r["finished"], bool) for r in listed)
            info = await cli.get(f"/v1/reconciliations/{listed[0]['schedulingID']}/info")
            assert info.status_code == 200
            assert {op["state"] for op in info.json()["operations"]} == {"done"}
            # enabling (`ready`) answers `reconcile_pending`: a run re-verifies the cluster
            # before it reads ready again
            for wanted, answer in (
                ("reconcile_disabled", "reconcile_disabled"),
                ("ready", "reconcile_pending"),
            ):
                changed = await cli.put(
                    f"/v1/clusters/{RUNTIME}/status", content=go_marshal({"status": wanted})
                )
                assert changed.status_code == 201, changed.text
                assert http_cluster_response(changed)["status"] == answer

            async def state_ready() -> bool:
                state = await cli.get("/v1/clusters/state", params={"runtimeID": RUNTIME})
                return bool(state.json()["status"]["status"] == "ready")

            await poll_until(state_ready, timeout=30, what="the enabled cluster to be ready")
            purged = await cli.delete(f"/v1/reconciliations/cluster/{RUNTIME}")
            assert purged.status_code == 200, purged.text
            refused = await cli.post("/v1/clusters", content=go_marshal(update))
            assert refused.status_code == 403  # the CLI's identity is an operator only

            # deprovisioning, then a second delete of what is gone
            await keb.delete_cluster(RUNTIME)
            await poll_until(
                lambda: _latest_is(keb, "deleted"), timeout=30, what="the cluster to be deleted"
            )
            await keb.delete_cluster(RUNTIME)
            await keb.delete_cluster("00000000-0000-4000-8000-00000000dead")

            # re-provisioning the same runtime ID starts a fresh cluster
            again = await keb.apply_cluster_config(keb_cluster("cluster-essentials"))
            assert again["status"] == "reconcile_pending"
            assert again["configurationVersion"] > 2
            await keb.until(RUNTIME, again["configurationVersion"], "ready")


async def _latest_is(keb: Broker, status: str) -> bool:
    return (await keb.get_latest_cluster(RUNTIME))["status"] == status
