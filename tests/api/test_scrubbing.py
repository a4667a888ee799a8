"""A chart that puts a `secret: true` value where the apiserver echoes it (an invalid label):
the rejection reaches no failure reason, reconciliation info, log line or stored callback error
with the secret in it; the reason says `<redacted>` instead."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from reconciler.api import ApiSettings
from reconciler.api.auth import Role
from reconciler.charts.sources import ChartCache
from reconciler.core.actions import ActionRegistry
from reconciler.core.charts import HelmChartProvider
from reconciler.core.runner import ComponentReconciler
from reconciler.model.remote import CallbackMessage, CallbackStatus
from reconciler.model.status import OperationState
from reconciler.mothership.invoker import InProcessInvoker, Invoker
from reconciler.mothership.planner import Planner
from reconciler.observability.logging import configure_logging
from reconciler.store.callback_secrets import CallbackSecrets
from reconciler.util.polling import poll_until
from reconciler.util.secrecy import REDACTED
from tests.api.support import Gate, Tokens, cluster_body, running_api
from tests.conftest import KubeTarget
from tests.helpers.charts import LONG_SECRET, make_chart, pieces_in, secret_label
from tests.helpers.clusters import cluster_spec
from tests.remote.support import serve_app

SECRET = "hunter2-secret-value"  # the `password` entry of cluster_body, `secret: true`


def in_process(cache: Path) -> Any:
    def factory(planner: Planner) -> Invoker:
        core = ComponentReconciler(HelmChartProvider(ChartCache(cache)), ActionRegistry())
        return InProcessInvoker(planner, core, timeout=30)

    return factory


async def failed_run(
    tmp_path: Path, tokens: Tokens, body: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """Post `body` to a mothership running in-process and wait for it to fail: its status,
    its reconciliations and their infos, as a viewer reads them."""
    runtime_id = body["runtimeID"]
    async with running_api(
        tmp_path,
        ApiSettings(tokens_file=tokens.path),
        invoker=in_process(tmp_path / "cache"),
        headers=tokens.header(Role.ADMIN),
    ) as api:
        assert (await api.client.post("/v1/clusters", json=body)).status_code == 200

        async def failed() -> dict[str, Any] | None:
            status = (await api.client.get(f"/v1/clusters/{runtime_id}/status")).json()
            return status if status["status"] == "error" else None

        status = await poll_until(failed, timeout=60, what=f"{runtime_id} to fail")
        listed = (await api.client.get(f"/v1/reconciliations?runtimeID={runtime_id}")).json()
        infos = [
            (await api.client.get(f"/v1/reconciliations/{item['schedulingID']}/info")).text
            for item in listed
        ]
    return status, listed, infos


@pytest.mark.parametrize("secret", [SECRET, LONG_SECRET], ids=["short", "904-characters"])
async def test_a_secret_value_echoed_by_the_apiserver_is_redacted_in_reasons_info_and_logs(
    secret: str,
    tmp_path: Path,
    tokens: Tokens,
    kube_cluster: KubeTarget,
    namespace: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(json_lines=True, level="DEBUG")
    chart = make_chart(tmp_path, "leaky", {"cm.yaml": secret_label("password")})
    body = cluster_body("rt-leak", kubeconfig=kube_cluster.kubeconfig.read_text())
    component = body["kymaConfig"]["components"][0]
    component.update({"URL": str(chart), "namespace": namespace})
    for entry in component["configuration"]:
        if entry["key"] == "password":
            entry["value"] = secret
    body["kymaConfig"]["components"] = [component]
    status, listed, infos = await failed_run(tmp_path, tokens, body)
    (failure,) = status["failures"]
    assert "Invalid value" in failure["reason"]
    assert REDACTED in failure["reason"]
    logs = capsys.readouterr()
    everything = "\n".join([json.dumps(status), json.dumps(listed), *infos, logs.out, logs.err])
    assert "operation failed" in everything  # the failure was logged at all
    assert secret not in everything
    assert not pieces_in(secret, everything)


async def test_a_component_reconcilers_error_callback_is_stored_without_the_secrets(
    tmp_path: Path,
) -> None:
    kubeconfig = "apiVersion: v1\nkind: Config\nusers: [{name: u, user: {token: kube-token-42}}]\n"
    spec = cluster_spec(
        "rt-cb",
        kubeconfig=kubeconfig,
        components=("istio",),
        configuration={"istio": [{"key": "password", "value": SECRET, "secret": True}]},
    )
    gate = Gate("istio")
    async with running_api(tmp_path, ApiSettings(auth="none"), invoker=gate.factory) as api:
        await api.engine.service.upsert_cluster(spec)
        await gate.entered.wait()
        (rec,) = await api.engine.service.reconciliations(runtime_ids=["rt-cb"])
        _, (istio,) = await api.engine.service.reconciliation(rec.scheduling_id)
        secret = await CallbackSecrets(api.engine.db).issue(istio.key)
        error = f'label "{SECRET}!" invalid; token kube-token-42 refused'
        message = CallbackMessage(
            status=CallbackStatus.ERROR, error=error, retryID=str(uuid.uuid4())
        )
        await api.engine.service.callback(
            rec.scheduling_id, istio.correlation_id, message, secret=secret, orphan_timeout=30
        )
        stored = await api.engine.service.operation(rec.scheduling_id, istio.correlation_id)
        gate.release.set()
    assert stored.state is OperationState.ERROR
    assert stored.reason == f'label "{REDACTED}!" invalid; token {REDACTED} refused'


def internal_service() -> FastAPI:
    """What a kubeconfig's server may be after its admission check passed: an internal page."""
    app = FastAPI()

    @app.api_route("/{path:path}", methods=["GET", "POST", "PATCH", "PUT", "DELETE"])
    async def page(path: str) -> HTMLResponse:
        return HTMLResponse(f"<html>{INTERNAL_PAGE} {path}</html>", status_code=403)

    return app


INTERNAL_PAGE = "INTERNAL-ADMIN-PAGE secret-db-password=swordfish " * 40


async def test_a_run_against_an_internal_service_reads_none_of_its_page_back(
    tmp_path: Path, tokens: Tokens
) -> None:
    """SSRF read-back during mothership runs (issue 26, item 9): the reason names the HTTP
    status and that no Kubernetes apiserver answered, never the page."""
    chart = make_chart(tmp_path, "plain", {"cm.yaml": secret_label("password")})
    async with serve_app(internal_service()) as url:
        kubeconfig = yaml.safe_dump(
            {
                "apiVersion": "v1",
                "clusters": [{"name": "c", "cluster": {"server": url}}],
                "users": [{"name": "u", "user": {"token": "t0ken-value-1234"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
        body = cluster_body("rt-ssrf", kubeconfig=kubeconfig)
        component = body["kymaConfig"]["components"][0]
        component.update({"URL": str(chart), "namespace": "default"})
        body["kymaConfig"]["components"] = [component]
        status, listed, infos = await failed_run(tmp_path, tokens, body)
    (failure,) = status["failures"]
    assert "HTTP 403 Forbidden" in failure["reason"], failure
    assert "not from a Kubernetes apiserver" in failure["reason"]
    everything = "\n".join([json.dumps(status), json.dumps(listed), *infos])
    assert "INTERNAL-ADMIN-PAGE" not in everything
    assert "swordfish" not in everything
