"""`POST /v1/clusters/{runtimeID}/config/{configVersion}/restore`: admins roll a cluster back to an
earlier configuration version, which is reconciled; history and config list show the rollback.
On SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler.api import ApiSettings
from reconciler.api.auth import Role
from reconciler.util.polling import poll_until
from tests.api.support import Api, Tokens, cluster_body, running_api, snapshot
from tests.helpers.invokers import new_key_file


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    if request.param == "sqlite":
        return ""  # the engine's default: SQLite in its data directory
    url: str = request.getfixturevalue("postgres_url")
    return url


async def _ready(api: Api, runtime_id: str, config_version: int) -> dict[str, Any]:
    async def reached() -> dict[str, Any] | None:
        body: dict[str, Any] = (await api.client.get(f"/v1/clusters/{runtime_id}/status")).json()
        ok = body["status"] == "ready" and body["configurationVersion"] == config_version
        return body if ok else None

    return await poll_until(reached, timeout=60, what=f"{runtime_id} ready at {config_version}")


async def _two_versions(api: Api, runtime_id: str) -> tuple[int, int]:
    first = await api.client.post("/v1/clusters", json=cluster_body(runtime_id))
    v1 = first.json()["configurationVersion"]
    await _ready(api, runtime_id, v1)
    second = await api.client.put(
        "/v1/clusters", json=cluster_body(runtime_id, components=("istio",))
    )
    v2 = second.json()["configurationVersion"]
    await _ready(api, runtime_id, v2)
    return v1, v2


async def test_admin_rolls_back_and_the_old_configuration_is_reconciled(
    tmp_path: Path, tokens: Tokens, database_url: str
) -> None:
    settings = ApiSettings(tokens_file=tokens.path)
    key = {"encryption_key_file": new_key_file(tmp_path / "key")} if database_url else {}
    async with running_api(
        tmp_path, settings, headers=tokens.header(Role.ADMIN), database_url=database_url, **key
    ) as api:
        runtime_id = f"rt-back-{'pg' if database_url else 'lite'}"
        v1, v2 = await _two_versions(api, runtime_id)

        answer = await api.client.post(f"/v1/clusters/{runtime_id}/config/{v1}/restore")
        assert answer.status_code == 201, answer.text
        body = answer.json()
        v3 = body["configurationVersion"]
        assert v3 > v2
        assert body["restoredFrom"] == v1
        assert body["status"] == "reconcile_pending"
        assert body["statusURL"].endswith(f"/v1/clusters/{runtime_id}/configs/{v3}/status")

        await _ready(api, runtime_id, v3)  # a reconciliation of the restored version ran
        runs = await api.client.get("/v1/reconciliations", params={"runtimeID": runtime_id})
        info = await api.client.get(f"/v1/reconciliations/{runs.json()[0]['schedulingID']}/info")
        assert info.json()["configVersion"] == v3
        ops = info.json()["operations"]
        assert sorted(op["component"] for op in ops) == ["cluster-essentials", "istio"]

        old = (await api.client.get(f"/v1/clusters/{runtime_id}/config/{v1}")).json()
        new = (await api.client.get(f"/v1/clusters/{runtime_id}/config/{v3}")).json()
        assert new == old

        configs = (await api.client.get(f"/v1/clusters/{runtime_id}/configs")).json()
        assert [(c["version"], c["restoredFrom"]) for c in configs] == [
            (v3, v1),
            (v2, None),
            (v1, None),
        ]
        changes = (await api.client.get(f"/v1/clusters/{runtime_id}/statusChanges")).json()
        rollback = [c for c in changes["statusChanges"] if c["configVersion"] == v3]
        assert rollback
        assert all(c["restoredFrom"] == v1 for c in rollback)
        assert [c["status"] for c in rollback][-1] == "reconcile_pending"
        audited = [line for line in api.audit_lines() if line["action"].endswith("/restore")]
        assert [(a["subject"], a["runtime_id"]) for a in audited] == [("admin-user", runtime_id)]


async def test_only_admins_roll_back_and_unknown_targets_are_404_with_nothing_written(
    tmp_path: Path, tokens: Tokens
) -> None:
    settings = ApiSettings(tokens_file=tokens.path)
    async with running_api(tmp_path, settings, headers=tokens.header(Role.ADMIN)) as api:
        v1, _ = await _two_versions(api, "rt-guard")
        before = await snapshot(api.engine)
        for role in (Role.VIEWER, Role.OPERATOR):
            refused = await api.client.post(
                f"/v1/clusters/rt-guard/config/{v1}/restore", headers=tokens.header(role)
            )
            assert refused.status_code == 403, (role, refused.text)
        unknown = await api.client.post(f"/v1/clusters/rt-nope/config/{v1}/restore")
        assert unknown.status_code == 404
        assert unknown.json() == {"error": "cluster rt-nope not found"}
        missing = await api.client.post("/v1/clusters/rt-guard/config/999/restore")
        assert missing.status_code == 404
        assert "configuration version 999 of cluster rt-guard not found" in missing.json()["error"]
        bad = await api.client.post("/v1/clusters/rt-guard/config/0/restore")
        assert bad.status_code == 400
        assert await snapshot(api.engine) == before

        await api.client.delete("/v1/clusters/rt-guard")
        gone = await api.client.post(f"/v1/clusters/rt-guard/config/{v1}/restore")
        assert gone.status_code == 409
        assert "cannot be rolled back" in gone.json()["error"]
