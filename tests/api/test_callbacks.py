"""POST /v1/operations/{schedulingID}/callback/{correlationID}: component reconcilers only,
and for each operation only the one holding the callback secret of its latest hand-over."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reconciler.api import ApiSettings
from reconciler.model.operation import BLOCKER_MAX, Operation
from reconciler.model.remote import CALLBACK_SECRET_HEADER
from reconciler.model.status import OperationState
from reconciler.store.callback_secrets import CallbackSecrets
from tests.api.support import Api, Gate, running_api
from tests.helpers.clusters import cluster_spec

TOKEN = "component-reconciler-token"


def body(status: str, error: str = "") -> dict[str, Any]:
    return {"status": status, "error": error, "retryID": str(uuid.uuid4()), "processingDuration": 1}


@dataclass
class HandedOver:
    api: Api
    op: Operation
    url: str
    secret: str

    async def state(self) -> OperationState:
        return (await self.api.engine.service.operation(*self.op.key)).state


@asynccontextmanager
async def handed_over(tmp_path: Path, **spec: Any) -> AsyncIterator[HandedOver]:
    """istio in progress (held by a gate) with a callback secret issued as on a hand-over."""
    gate = Gate("istio")
    settings = ApiSettings(auth="none", callback_token=TOKEN, callback_orphan_timeout=30)
    async with running_api(
        tmp_path, settings, invoker=gate.factory, headers={"Authorization": f"Bearer {TOKEN}"}
    ) as api:
        await api.engine.service.upsert_cluster(cluster_spec("rt-cb", **spec))
        await gate.entered.wait()
        (rec,) = await api.engine.service.reconciliations(runtime_ids=["rt-cb"])
        _, ops = await api.engine.service.reconciliation(rec.scheduling_id)
        istio = next(op for op in ops if op.component == "istio")
        assert api.engine.db is not None
        secret = await CallbackSecrets(api.engine.db).issue(istio.key)
        url = f"/v1/operations/{rec.scheduling_id}/callback/{istio.correlation_id}"
        try:
            yield HandedOver(api, istio, url, secret)
        finally:
            gate.release.set()


async def test_callbacks_drive_the_operation_and_final_ones_are_refused(tmp_path: Path) -> None:
    async with handed_over(tmp_path) as h:
        client, signed = h.api.client, {CALLBACK_SECRET_HEADER: h.secret}
        ok = await client.post(h.url, json=body("running"), headers=signed)
        assert ok.status_code == 200
        failed = await client.post(h.url, json=body("failed", "flaky"), headers=signed)
        assert failed.status_code == 200
        parked = await h.api.engine.service.operation(*h.op.key)
        assert parked.state is OperationState.FAILED
        assert parked.reason == "flaky"
        done = await client.post(h.url, json=body("success"), headers=signed)
        assert done.status_code == 200
        again = await client.post(h.url, json=body("running"), headers=signed)
        assert again.status_code == 400
        assert "already done" in again.json()["error"]
        unknown = await client.post(
            h.url.replace(h.op.correlation_id, "nope"), json=body("running"), headers=signed
        )
        forged = await client.post(
            h.url, json=body("running"), headers={CALLBACK_SECRET_HEADER: "guessed"}
        )
        # an unknown operation is refused as a forbidden one: nothing tells which exist
        assert unknown.status_code == forged.status_code == 403
        assert (
            unknown.json()["error"].replace("nope", h.op.correlation_id) == forged.json()["error"]
        )
        bad = await client.post(h.url, json={"status": "finished"}, headers=signed)
        assert bad.status_code == 400
        assert "status" in bad.json()["error"]


async def test_forged_success_with_the_fleet_token_but_not_the_task_secret_is_refused(
    tmp_path: Path,
) -> None:
    async with handed_over(tmp_path) as h:
        client = h.api.client  # sends the fleet-wide callback token
        for headers in ({}, {CALLBACK_SECRET_HEADER: "guessed"}):
            forged = await client.post(h.url, json=body("success"), headers=headers)
            assert forged.status_code == 403, forged.text
            assert "callback secret" in forged.json()["error"]
        assert await h.state() is OperationState.IN_PROGRESS
        real = await client.post(
            h.url, json=body("success"), headers={CALLBACK_SECRET_HEADER: h.secret}
        )
        assert real.status_code == 200
        assert await h.state() is OperationState.DONE


async def test_a_new_hand_over_shuts_out_the_previous_secret(tmp_path: Path) -> None:
    async with handed_over(tmp_path) as h:
        assert h.api.engine.db is not None
        newer = await CallbackSecrets(h.api.engine.db).issue(h.op.key)
        old = await h.api.client.post(
            h.url, json=body("success"), headers={CALLBACK_SECRET_HEADER: h.secret}
        )
        assert old.status_code == 403
        new = await h.api.client.post(
            h.url, json=body("running"), headers={CALLBACK_SECRET_HEADER: newer}
        )
        assert new.status_code == 200


async def test_retry_id_must_be_a_uuid(tmp_path: Path) -> None:
    async with handed_over(tmp_path) as h:
        signed = {CALLBACK_SECRET_HEADER: h.secret}
        for retry_id in ("r1", ""):
            sent = {**body("success"), "retryID": retry_id}
            answer = await h.api.client.post(h.url, json=sent, headers=signed)
            assert answer.status_code == 400
            assert answer.json()["error"].startswith("retryID: ")
        missing = {k: v for k, v in body("success").items() if k != "retryID"}
        answer = await h.api.client.post(h.url, json=missing, headers=signed)
        assert answer.status_code == 400
        assert "retryID" in answer.json()["error"]
        assert await h.state() is OperationState.IN_PROGRESS


async def test_callbacks_need_the_component_reconciler_token(tmp_path: Path) -> None:
    settings = ApiSettings(auth="none", callback_token=TOKEN)
    async with running_api(tmp_path, settings) as api:
        url = "/v1/operations/s/callback/c"
        sent = body("running")
        missing = await api.client.post(url, json=sent)
        assert missing.status_code == 401
        wrong = await api.client.post(url, json=sent, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 403
        right = await api.client.post(url, json=sent, headers={"Authorization": f"Bearer {TOKEN}"})
        assert right.status_code == 403  # authenticated; no such operation, so no secret fits


async def test_heartbeats_write_no_audit_line_results_and_refusals_do(tmp_path: Path) -> None:
    async with handed_over(tmp_path) as h:
        signed = {CALLBACK_SECRET_HEADER: h.secret}
        for _ in range(5):
            beat = await h.api.client.post(h.url, json=body("running"), headers=signed)
            assert beat.status_code == 200
        forged = await h.api.client.post(h.url, json=body("running"))
        assert forged.status_code == 403
        done = await h.api.client.post(h.url, json=body("success"), headers=signed)
        assert done.status_code == 200
        lines = h.api.audit_lines()
    assert [(line["outcome"], line.get("source")) for line in lines] == [
        (403, "127.0.0.1"),
        (200, None),
    ]
    assert {line["correlation_id"] for line in lines} == {h.op.correlation_id}


async def test_callback_token_is_checked_before_the_body_is_parsed(tmp_path: Path) -> None:
    settings = ApiSettings(auth="none", callback_token=TOKEN)
    async with running_api(tmp_path, settings) as api:
        url = "/v1/operations/s/callback/c"
        for headers, status in (({}, 401), ({"Authorization": "Bearer nope"}, 403)):
            response = await api.client.post(url, content=b"{not json", headers=headers)
            assert response.status_code == status, response.text
            assert "JSON" not in response.json()["error"]


async def test_callbacks_report_what_blocks_readiness_scrubbed_and_bounded(tmp_path: Path) -> None:
    secret_value = "hunter2-blocker-secret"
    config = {"istio": [{"key": "password", "value": secret_value, "secret": True}]}
    async with handed_over(tmp_path, configuration=config) as h:
        client, signed = h.api.client, {CALLBACK_SECRET_HEADER: h.secret}
        waiting = "deployment kyma-system/istiod: 0/1 replicas available"
        sent = await client.post(
            h.url, json={**body("running"), "blocker": waiting}, headers=signed
        )
        assert sent.status_code == 200
        assert (await h.api.engine.service.operation(*h.op.key)).blocker == waiting
        quiet = await client.post(h.url, json=body("running"), headers=signed)
        assert quiet.status_code == 200  # a heartbeat without a blocker keeps the last one
        assert (await h.api.engine.service.operation(*h.op.key)).blocker == waiting

        too_long = {**body("running"), "blocker": "x" * (BLOCKER_MAX + 1)}
        refused = await client.post(h.url, json=too_long, headers=signed)
        assert refused.status_code == 400
        assert refused.json()["error"].startswith("blocker: ")
        leaky = f"job kyma-system/setup: failed (password {secret_value})"
        failed = {**body("error", "setup failed"), "blocker": leaky}
        assert (await client.post(h.url, json=failed, headers=signed)).status_code == 200
        stored = await h.api.engine.service.operation(*h.op.key)
        assert stored.state is OperationState.ERROR
        assert stored.blocker.startswith("job kyma-system/setup: failed (password ")
        assert secret_value not in stored.blocker
        info = await client.get(f"/v1/reconciliations/{h.op.scheduling_id}/info")
        (istio,) = [op for op in info.json()["operations"] if op["component"] == "istio"]
        assert istio["blocker"] == stored.blocker
