"""POST /v1/operations/{schedulingID}/callback/{correlationID}: component reconcilers only."""

from __future__ import annotations

from pathlib import Path

from reconciler.api import ApiSettings
from reconciler.model.status import OperationState
from tests.api.support import Gate, running_api
from tests.helpers.clusters import cluster_spec

TOKEN = "component-reconciler-token"


async def test_callbacks_drive_the_operation_and_final_ones_are_refused(tmp_path: Path) -> None:
    gate = Gate("istio")
    settings = ApiSettings(auth="none", callback_token=TOKEN, callback_orphan_timeout=30)
    async with running_api(
        tmp_path, settings, invoker=gate.factory, headers={"Authorization": f"Bearer {TOKEN}"}
    ) as api:
        await api.engine.service.upsert_cluster(cluster_spec("rt-cb"))
        await gate.entered.wait()  # istio is in progress, held by the gate
        (rec,) = await api.engine.service.reconciliations(runtime_ids=["rt-cb"])
        _, ops = await api.engine.service.reconciliation(rec.scheduling_id)
        istio = next(op for op in ops if op.component == "istio")
        url = f"/v1/operations/{rec.scheduling_id}/callback/{istio.correlation_id}"

        ok = await api.client.post(
            url, json={"status": "running", "error": "", "retryID": "r1", "processingDuration": 10}
        )
        assert ok.status_code == 200
        failed = await api.client.post(
            url,
            json={"status": "failed", "error": "flaky", "retryID": "r1", "processingDuration": 10},
        )
        assert failed.status_code == 200
        parked = await api.engine.service.operation(rec.scheduling_id, istio.correlation_id)
        assert parked.state is OperationState.FAILED
        assert parked.reason == "flaky"
        done = await api.client.post(
            url, json={"status": "success", "error": "", "retryID": "r2", "processingDuration": 10}
        )
        assert done.status_code == 200
        again = await api.client.post(
            url, json={"status": "running", "error": "", "retryID": "r3", "processingDuration": 1}
        )
        assert again.status_code == 400
        assert "already done" in again.json()["error"]
        unknown = await api.client.post(
            f"/v1/operations/{rec.scheduling_id}/callback/nope",
            json={"status": "running", "error": "", "retryID": "x", "processingDuration": 1},
        )
        assert unknown.status_code == 404
        bad = await api.client.post(url, json={"status": "finished"})
        assert bad.status_code == 400
        assert "status" in bad.json()["error"]
        gate.release.set()


async def test_callbacks_need_the_component_reconciler_token(tmp_path: Path) -> None:
    settings = ApiSettings(auth="none", callback_token=TOKEN)
    async with running_api(tmp_path, settings) as api:
        url = "/v1/operations/s/callback/c"
        body = {"status": "running", "error": "", "retryID": "r", "processingDuration": 1}
        missing = await api.client.post(url, json=body)
        assert missing.status_code == 401
        wrong = await api.client.post(url, json=body, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 403
        right = await api.client.post(url, json=body, headers={"Authorization": f"Bearer {TOKEN}"})
        assert right.status_code == 404  # authenticated; the operation does not exist
