"""The component reconciler service in-process, reconciling charts on the real test-bed apiserver
and reporting to a stand-in mothership over real HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lightkube import AsyncClient
from lightkube.resources.core_v1 import ConfigMap

from reconciler.model.remote import CallbackStatus
from reconciler.util.polling import poll_until
from tests.remote.support import TOKEN, CallbackReceiver, running_service, settings, task_body


def slow_task(
    receiver: CallbackReceiver,
    correlation_id: str,
    chart: Path,
    namespace: str,
    kubeconfig: str,
    **fields: Any,
) -> dict[str, Any]:
    """A task whose Deployment never gets ready (no kubelet): it stays running until its timeout."""
    return task_body(
        chart=chart,
        namespace=namespace,
        component="slow",
        kubeconfig=kubeconfig,
        callback_url=receiver.callback_url(correlation_id),
        correlation_id=correlation_id,
        **({"timeout": 120} | fields),
    )


RUNNING, FAILED = CallbackStatus.RUNNING, CallbackStatus.FAILED
SUCCESS, ERROR = CallbackStatus.SUCCESS, CallbackStatus.ERROR


async def test_task_applies_chart_and_reports_heartbeats_then_success(
    tmp_path: Path,
    receiver: CallbackReceiver,
    kubeconfig_text: str,
    configmaps_chart: Path,
    namespace: str,
    kube_client: AsyncClient,
) -> None:
    async with running_service(settings(tmp_path)) as (_, client):
        body = task_body(
            chart=configmaps_chart,
            namespace=namespace,
            kubeconfig=kubeconfig_text,
            callback_url=receiver.callback_url("c-ok"),
            correlation_id="c-ok",
        )
        response = await client.post("/v1/run", json=body)
        assert response.status_code == 200
        assert response.json() == {"status": "accepted"}
        final = await receiver.wait_final("c-ok")

    assert final.status is SUCCESS, final.error
    statuses = receiver.statuses("c-ok")
    assert statuses[0] is RUNNING
    assert statuses[-1] is SUCCESS
    assert set(statuses[:-1]) == {RUNNING}
    assert all(r.authorization == f"Bearer {TOKEN}" for r in receiver.of("c-ok"))
    assert final.retry_id
    assert final.processing_duration > 0
    names = {
        cm.metadata.name
        async for cm in kube_client.list(ConfigMap, namespace=namespace)
        if cm.metadata
    }
    assert {"a", "b"} <= names


async def test_chart_that_fails_to_render_reports_failed_per_retry_then_error(
    tmp_path: Path,
    receiver: CallbackReceiver,
    kubeconfig_text: str,
    broken_chart: Path,
    namespace: str,
) -> None:
    async with running_service(settings(tmp_path)) as (_, client):
        body = task_body(
            chart=broken_chart,
            namespace=namespace,
            component="broken",
            kubeconfig=kubeconfig_text,
            callback_url=receiver.callback_url("c-broken"),
            correlation_id="c-broken",
            componentConfiguration={"maxRetries": 2},
        )
        assert (await client.post("/v1/run", json=body)).status_code == 200
        final = await receiver.wait_final("c-broken")

    assert final.status is ERROR
    assert "component broken" in final.error
    assert "this chart is broken" in final.error
    failed = [r.message for r in receiver.of("c-broken") if r.message.status is FAILED]
    assert len(failed) == 2  # one per retried attempt; the last attempt ends in `error`
    assert all("this chart is broken" in m.error for m in failed)
    assert len({m.retry_id for m in [*failed, final]}) == 3  # one retry ID per attempt
    assert receiver.statuses("c-broken")[-1] is ERROR


async def test_full_pool_answers_429_until_a_slot_is_free(
    tmp_path: Path,
    receiver: CallbackReceiver,
    kubeconfig_text: str,
    deployment_chart: Path,
    configmaps_chart: Path,
    namespace: str,
) -> None:
    async with running_service(settings(tmp_path, workers=1)) as (app, client):
        slow = slow_task(
            receiver,
            "c-slow",
            deployment_chart,
            namespace,
            kubeconfig_text,
        )
        assert (await client.post("/v1/run", json=slow)).status_code == 200
        await receiver.wait_status("c-slow", RUNNING)

        other = task_body(
            chart=configmaps_chart,
            namespace=namespace,
            kubeconfig=kubeconfig_text,
            callback_url=receiver.callback_url("c-other"),
            correlation_id="c-other",
        )
        busy = await client.post("/v1/run", json=other)
        assert busy.status_code == 429
        assert "pool full" in busy.json()["error"]
        assert busy.headers["retry-after"] == "1"
        assert (busy.headers["x-pool-busy"], busy.headers["x-pool-size"]) == ("1", "1")
        # the same task again is acknowledged, not run twice
        assert (await client.post("/v1/run", json=slow)).status_code == 200
        assert app.state.service.pool.busy == 1
        metrics = (await client.get("/metrics")).text
        assert "reconciler_component_pool_busy 1.0" in metrics
        assert 'reconciler_component_runs_rejected_total{reason="busy"} 1.0' in metrics
    # leaving the block shut the service down: the slow task's mothership hears about it
    final = receiver.of("c-slow")[-1].message
    assert final.status is FAILED
    assert final.error == "component reconciler shutting down"
    assert receiver.of("c-other") == []


async def test_final_callback_is_retried_until_the_mothership_takes_it(
    tmp_path: Path,
    receiver: CallbackReceiver,
    kubeconfig_text: str,
    configmaps_chart: Path,
    namespace: str,
) -> None:
    receiver.refuse_final = 2
    async with running_service(settings(tmp_path)) as (app, client):
        body = task_body(
            chart=configmaps_chart,
            namespace=namespace,
            kubeconfig=kubeconfig_text,
            callback_url=receiver.callback_url("c-retry"),
            correlation_id="c-retry",
        )
        assert (await client.post("/v1/run", json=body)).status_code == 200
        final = await receiver.wait_final("c-retry")

        async def pool_empty() -> bool:
            return bool(app.state.service.pool.busy == 0)

        await poll_until(pool_empty, timeout=10, what="the task to leave the pool")
        metrics = (await client.get("/metrics")).text

    finals = [r for r in receiver.of("c-retry") if r.message.status is SUCCESS]
    assert [r.answered for r in finals] == [503, 503, 200]
    assert final.status is SUCCESS
    assert 'reconciler_component_callbacks_total{status="success"} 1.0' in metrics
    assert (
        'reconciler_component_callback_failures_total{reason="503",status="success"} 2.0' in metrics
    )
    assert 'reconciler_component_tasks_total{component="web",result="success"} 1.0' in metrics


async def test_heartbeat_answered_400_stops_the_task_without_more_callbacks(
    tmp_path: Path,
    receiver: CallbackReceiver,
    kubeconfig_text: str,
    deployment_chart: Path,
    namespace: str,
) -> None:
    async with running_service(settings(tmp_path)) as (app, client):
        body = slow_task(
            receiver,
            "c-gone",
            deployment_chart,
            namespace,
            kubeconfig_text,
        )
        assert (await client.post("/v1/run", json=body)).status_code == 200
        await receiver.wait_status("c-gone", RUNNING)
        # the mothership finalises the operation by itself (e.g. a user stopped it)
        receiver.closed.add("c-gone")

        async def pool_empty() -> bool:
            return bool(app.state.service.pool.busy == 0)

        await poll_until(pool_empty, timeout=10, what="the abandoned task to leave the pool")
        answered = [r.answered for r in receiver.of("c-gone")]
    assert answered[-1] == 400
    assert answered.count(400) == 1


async def test_task_that_never_gets_ready_ends_in_error_at_its_timeout(
    tmp_path: Path,
    receiver: CallbackReceiver,
    kubeconfig_text: str,
    deployment_chart: Path,
    namespace: str,
) -> None:
    async with running_service(settings(tmp_path)) as (_, client):
        body = slow_task(
            receiver,
            "c-late",
            deployment_chart,
            namespace,
            kubeconfig_text,
            componentConfiguration={"maxRetries": 5},
            timeout=3,
        )
        assert (await client.post("/v1/run", json=body)).status_code == 200
        final = await receiver.wait_final("c-late", timeout=30)
    assert final.status is ERROR
    assert "component slow" in final.error
    assert "slow" in final.error.split(":", 1)[1]  # names the object that never got ready
    assert 3000 <= final.processing_duration < 10_000  # the timeout bounds all attempts


async def test_a_task_sent_again_reports_with_the_newest_callback_secret(
    tmp_path: Path,
    receiver: CallbackReceiver,
    kubeconfig_text: str,
    deployment_chart: Path,
    namespace: str,
) -> None:
    """The mothership re-sends a task it took for an orphan with a new secret and refuses the old
    one: the task still in the pool must switch to the new secret, not report into a 403."""
    async with running_service(settings(tmp_path)) as (app, client):
        body = slow_task(
            receiver,
            "c-again",
            deployment_chart,
            namespace,
            kubeconfig_text,
            callbackSecret="first-secret",
        )
        assert (await client.post("/v1/run", json=body)).status_code == 200
        await receiver.wait_status("c-again", RUNNING)
        again = {**body, "callbackSecret": "second-secret"}
        assert (await client.post("/v1/run", json=again)).status_code == 200
        assert app.state.service.pool.busy == 1

        async def switched() -> bool:
            return any(r.secret == "second-secret" for r in receiver.of("c-again"))

        await poll_until(switched, timeout=30, what="a callback with the second secret")
        seen = [r.secret for r in receiver.of("c-again")]
        assert set(seen) == {"first-secret", "second-secret"}
        assert seen.index("second-secret") > max(
            i for i, secret in enumerate(seen) if secret == "first-secret"
        )  # never back to the old one
