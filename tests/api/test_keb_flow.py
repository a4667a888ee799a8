"""The environment broker's flow end to end: register a real cluster, poll the returned
`statusURL` until it is ready, delete it, poll until it is deleted.

The kubeconfig is checked for real (the default check contacts the test-bed apiserver); the
engine runs with a no-op invoker, so "ready" means the reconciliation was planned, run and
booked, not that charts were deployed (the engine's own tests cover that).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconciler.api import ApiSettings
from reconciler.api.auth import Role
from reconciler.util.polling import poll_until
from tests.api.support import Api, Tokens, cluster_body, running_api
from tests.conftest import KubeTarget


async def _poll(api: Api, status_url: str, wanted: str) -> dict[str, Any]:
    async def reached() -> dict[str, Any] | None:
        response = await api.client.get(status_url)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        assert body["status"] not in ("error", "delete_error"), body
        return body if body["status"] == wanted else None

    return await poll_until(reached, timeout=60, what=f"{status_url} to report {wanted}")


async def test_broker_registers_polls_until_ready_then_deletes_until_deleted(
    kube_cluster: KubeTarget, tmp_path: Path, tokens: Tokens
) -> None:
    settings = ApiSettings(tokens_file=tokens.path)
    async with running_api(
        tmp_path, settings, check_kubeconfig=None, headers=tokens.header(Role.ADMIN)
    ) as api:
        body = cluster_body("rt-keb", kubeconfig=kube_cluster.kubeconfig.read_text())
        created = await api.client.post("/v1/clusters", json=body)
        assert created.status_code in (200, 201), created.text
        status_url = created.json()["statusURL"]
        assert status_url == "http://mothership.test/v1/clusters/rt-keb/configs/1/status"

        ready = await _poll(api, status_url, "ready")
        assert ready["failures"] == []

        deleted = await api.client.delete("/v1/clusters/rt-keb")
        assert deleted.status_code == 200, deleted.text
        assert deleted.json()["status"] in ("delete_pending", "deleting", "deleted")
        await _poll(api, status_url, "deleted")

        again = await api.client.delete("/v1/clusters/rt-unknown")
        assert again.status_code == 404  # the broker treats this as "already gone"
