"""Where real clients differ from the reference, or rely on the original's behaviour: both URL
spellings, repeated upserts, disabled clusters staying disabled, retryable statuses shown as
work in progress (raw in the reconciliation list), failures listed, JSON without Content-Type."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from reconciler.api import ApiSettings
from reconciler.api.auth import Role
from reconciler.model.cluster import ClusterState
from reconciler.model.operation import Operation
from reconciler.mothership.invoker import CallableInvoker, Invoker, InvokeResult
from reconciler.mothership.planner import Planner
from reconciler.util.polling import poll_until
from tests.api.support import Api, Gate, Tokens, cluster_body, running_api


async def _wait_status(api: Api, runtime_id: str, *wanted: str) -> dict[str, object]:
    async def reached() -> dict[str, object] | None:
        body: dict[str, object] = (await api.client.get(f"/v1/clusters/{runtime_id}/status")).json()
        return body if body["status"] in wanted else None

    return await poll_until(reached, timeout=30, what=f"{runtime_id} to be {wanted}")


async def test_post_and_put_are_the_same_upsert_and_repeat_without_new_versions(api: Api) -> None:
    first = (await api.client.post("/v1/clusters", json=cluster_body("rt-up"))).json()
    again = (
        await api.client.put(
            "/v1/clusters", json=cluster_body("rt-up", kubeconfig_key="kubeConfig")
        )
    ).json()
    assert (again["clusterVersion"], again["configurationVersion"]) == (1, 1)
    changed = cluster_body("rt-up", components=("istio",))
    third = (await api.client.put("/v1/clusters", json=changed)).json()
    assert (first["configurationVersion"], third["configurationVersion"]) == (1, 2)
    assert third["statusURL"].endswith("/v1/clusters/rt-up/configs/2/status")


async def test_both_status_url_spellings_and_both_offset_spellings_answer_alike(api: Api) -> None:
    await api.client.post("/v1/clusters", json=cluster_body("rt-spell"))
    await _wait_status(api, "rt-spell", "ready")
    plural = (await api.client.get("/v1/clusters/rt-spell/configs/1/status")).json()
    singular = (await api.client.get("/v1/clusters/rt-spell/config/1/status")).json()
    assert plural == singular
    query = (await api.client.get("/v1/clusters/rt-spell/statusChanges?offset=168h")).json()
    path = (await api.client.get("/v1/clusters/rt-spell/statusChanges/168h")).json()
    default = (await api.client.get("/v1/clusters/rt-spell/statusChanges")).json()
    assert [c["status"] for c in query["statusChanges"]] == [
        "ready",
        "reconciling",
        "reconcile_pending",
    ]
    assert isinstance(path, list)  # the path form is a bare array, as KEB decodes it
    assert [(c["started"], c["status"]) for c in path] == [
        (c["started"], c["status"]) for c in default["statusChanges"]
    ]
    assert all(isinstance(c["duration"], int) for c in query["statusChanges"])
    none = (await api.client.get("/v1/clusters/rt-spell/statusChanges/1ns")).json()
    assert none == []


async def test_disabled_cluster_stays_disabled_when_the_broker_upserts_it(api: Api) -> None:
    await api.client.post("/v1/clusters", json=cluster_body("rt-off"))
    await _wait_status(api, "rt-off", "ready")
    disabled = await api.client.put(
        "/v1/clusters/rt-off/status", json={"status": "reconcile_disabled"}
    )
    assert disabled.status_code == 201
    upserted = await api.client.post(
        "/v1/clusters", json=cluster_body("rt-off", components=("istio",))
    )
    assert upserted.json()["status"] == "reconcile_disabled"
    # enabling claims no result: a run that re-verifies the cluster is scheduled at once
    enabled = await api.client.put("/v1/clusters/rt-off/status", json={"status": "ready"})
    assert enabled.json()["status"] == "reconcile_pending"
    # the configuration stored while disabled has not been applied yet
    assert enabled.json()["health"]["health"] == "progressing"


def _gated(tmp_path: Path, tokens: Tokens, gate: Gate) -> AbstractAsyncContextManager[Api]:
    """An admin client of an API whose engine holds `gate`'s component until released."""
    return running_api(
        tmp_path,
        ApiSettings(tokens_file=tokens.path),
        invoker=gate.factory,
        headers=tokens.header(Role.ADMIN),
    )


async def test_cluster_disabled_during_a_run_stays_disabled_after_it(
    tmp_path: Path, tokens: Tokens
) -> None:
    gate = Gate("istio")
    async with _gated(tmp_path, tokens, gate) as api:
        await api.client.post("/v1/clusters", json=cluster_body("rt-race"))
        await asyncio.wait_for(gate.entered.wait(), timeout=30)
        await api.client.put("/v1/clusters/rt-race/status", json={"status": "reconcile_disabled"})
        gate.release.set()

        async def finished() -> bool:
            items = (await api.client.get("/v1/reconciliations?runtimeID=rt-race")).json()
            return bool(items) and bool(items[0]["finished"])

        await poll_until(finished, timeout=30, what="the run to finish")
        status = (await api.client.get("/v1/clusters/rt-race/status")).json()["status"]
        assert status == "reconcile_disabled"


def _failing(
    broken: set[str], reason: str, *, transient: bool = False
) -> Callable[[Planner], Invoker]:
    """Fails the components named in `broken` (a test repairs one by removing it)."""

    def factory(_planner: Planner) -> Invoker:
        async def invoke(op: Operation, _state: ClusterState) -> InvokeResult:
            if op.component in broken:
                return InvokeResult(False, f"component {op.component}: {reason}", transient)
            return InvokeResult(True)

        return CallableInvoker(invoke)

    return factory


async def test_retryable_errors_look_like_work_in_progress_except_in_the_reconciliation_list(
    tmp_path: Path, tokens: Tokens
) -> None:
    settings = ApiSettings(tokens_file=tokens.path)
    async with running_api(
        tmp_path,
        settings,
        invoker=_failing({"istio"}, "cluster unreachable", transient=True),
        headers=tokens.header(Role.ADMIN),
        retry_interval=3600,
    ) as api:
        await api.client.post("/v1/clusters", json=cluster_body("rt-retry"))

        async def listed_retryable() -> list[dict[str, object]] | None:
            items: list[dict[str, object]] = (
                await api.client.get("/v1/reconciliations?runtimeID=rt-retry")
            ).json()
            return items if items and items[0]["status"] == "reconcile_error_retryable" else None

        listed = await poll_until(listed_retryable, timeout=30, what="a retryable reconciliation")
        assert listed[0]["finished"] is True
        assert listed[0]["shootName"] == "shoot-rt-retry"
        status = (await api.client.get("/v1/clusters/rt-retry/status")).json()
        assert status["status"] == "reconciling"
        assert status["failures"] == [
            {"component": "istio", "reason": "component istio: cluster unreachable"}
        ]
        state = (await api.client.get("/v1/clusters/state?runtimeID=rt-retry")).json()
        assert state["status"]["status"] == "reconciling"
        changes = (await api.client.get("/v1/clusters/rt-retry/statusChanges")).json()[
            "statusChanges"
        ]
        assert "reconcile_error_retryable" not in {c["status"] for c in changes}


def _breakable(
    tmp_path: Path, tokens: Tokens, broken: set[str]
) -> AbstractAsyncContextManager[Api]:
    """An admin client of an API whose engine fails the components in `broken`."""
    return running_api(
        tmp_path,
        ApiSettings(tokens_file=tokens.path),
        invoker=_failing(broken, "broken chart"),
        headers=tokens.header(Role.ADMIN),
    )


async def test_reposting_an_identical_cluster_in_error_starts_a_new_reconciliation(
    tmp_path: Path, tokens: Tokens
) -> None:
    broken = {"istio"}
    async with _breakable(tmp_path, tokens, broken) as api:
        body = cluster_body("rt-repost")
        await api.client.post("/v1/clusters", json=body)
        failed = await _wait_status(api, "rt-repost", "error")
        assert failed["failures"] == [
            {"component": "istio", "reason": "component istio: broken chart"}
        ]
        broken.clear()

        reposted = await api.client.post("/v1/clusters", json=body)
        assert reposted.status_code == 200, reposted.text
        answer = reposted.json()
        assert (answer["configurationVersion"], answer["status"]) == (1, "reconcile_pending")
        await _wait_status(api, "rt-repost", "ready")
        runs = (await api.client.get("/v1/reconciliations?runtimeID=rt-repost")).json()
        assert [r["status"] for r in runs] == ["ready", "error"]

        again = (await api.client.put("/v1/clusters", json=body)).json()
        assert again["status"] == "reconcile_pending"  # a ready cluster is re-run as well


async def test_status_url_of_an_older_configuration_reports_that_versions_own_status(
    tmp_path: Path, tokens: Tokens
) -> None:
    broken: set[str] = set()
    async with _breakable(tmp_path, tokens, broken) as api:
        first = (await api.client.post("/v1/clusters", json=cluster_body("rt-own"))).json()
        await _wait_status(api, "rt-own", "ready")
        broken.add("serverless")
        body = cluster_body("rt-own", components=("istio", "serverless"))
        second = (await api.client.post("/v1/clusters", json=body)).json()
        await _wait_status(api, "rt-own", "error")

        old = (await api.client.get(first["statusURL"])).json()
        assert (old["configurationVersion"], old["status"], old["failures"]) == (1, "ready", [])
        new = (await api.client.get(second["statusURL"])).json()
        assert (new["configurationVersion"], new["status"]) == (2, "error")
        assert [f["component"] for f in new["failures"]] == ["serverless"]
        current = (await api.client.get("/v1/clusters/rt-own/status")).json()
        assert current == new


async def test_reposting_during_a_run_makes_another_run_follow_it(
    tmp_path: Path, tokens: Tokens
) -> None:
    gate = Gate("istio")
    async with _gated(tmp_path, tokens, gate) as api:
        body = cluster_body("rt-during")
        await api.client.post("/v1/clusters", json=body)
        await asyncio.wait_for(gate.entered.wait(), timeout=30)
        reposted = (await api.client.post("/v1/clusters", json=body)).json()
        assert reposted["status"] == "reconcile_pending"
        gate.release.set()
        await _wait_status(api, "rt-during", "ready")

        async def two_runs() -> list[dict[str, object]] | None:
            runs: list[dict[str, object]] = (
                await api.client.get("/v1/reconciliations?runtimeID=rt-during")
            ).json()
            return runs if len(runs) == 2 and all(r["finished"] for r in runs) else None

        runs = await poll_until(two_runs, timeout=30, what="a second run after the re-post")
        assert [r["status"] for r in runs] == ["ready", "ready"]
