"""Kubeconfigs and secret configuration values never leave the mothership: not in responses,
not in log lines, not in audit lines, whether the request is accepted or refused."""

from __future__ import annotations

import base64
import logging
from pathlib import Path

import httpx
import pytest
import yaml

from reconciler.api import ApiSettings, create_app
from reconciler.api.auth import Role
from reconciler.model.cluster import ClusterSpec, ClusterState
from reconciler.mothership.service import MothershipService
from reconciler.util.polling import poll_until
from tests.api.support import (
    SECRET_TOKEN,
    Api,
    Tokens,
    accept_kubeconfig,
    cluster_body,
    quiet_audit,
    running_api,
    secret_kubeconfig,
)
from tests.conftest import KubeTarget

SECRET_VALUE = "hunter2-secret-value"  # a `secret: true` configuration value in cluster_body


def _key_data(kubeconfig: str) -> str:
    user = yaml.safe_load(kubeconfig)["users"][0]["user"]
    return str(user["client-key-data"])


async def _everything_readable(api: Api, runtime_id: str) -> list[str]:
    """Every response body the API gives about the cluster."""
    bodies = []
    for path in (
        f"/v1/clusters/{runtime_id}/status",
        f"/v1/clusters/{runtime_id}/config/1",
        f"/v1/clusters/{runtime_id}/configs/1/status",
        f"/v1/clusters/{runtime_id}/statusChanges",
        f"/v1/clusters/state?runtimeID={runtime_id}",
        f"/v1/reconciliations?runtimeID={runtime_id}",
    ):
        bodies.append((await api.client.get(path)).text)
    listed = await api.client.get(f"/v1/reconciliations?runtimeID={runtime_id}")
    for item in listed.json():
        bodies.append(
            (await api.client.get(f"/v1/reconciliations/{item['schedulingID']}/info")).text
        )
    return bodies


async def test_kubeconfigs_and_secret_values_appear_in_no_response_log_or_audit_line(
    tmp_path: Path,
    tokens: Tokens,
    kube_cluster: KubeTarget,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    real = kube_cluster.kubeconfig.read_text()
    key_data = _key_data(real)
    key_pem = base64.b64decode(key_data).decode()
    broken_key = yaml.safe_load(secret_kubeconfig("https://127.0.0.1:1"))
    broken_key["users"][0]["user"] = {
        "client-certificate-data": SECRET_TOKEN,
        "client-key-data": SECRET_TOKEN,
    }
    with_exec = yaml.safe_load(secret_kubeconfig())
    with_exec["users"][0]["user"]["exec"] = {"command": "/bin/sh"}

    settings = ApiSettings(tokens_file=tokens.path, kubeconfig_timeout=2.0)
    responses: list[str] = []
    async with running_api(
        tmp_path, settings, check_kubeconfig=None, headers=tokens.header(Role.ADMIN)
    ) as api:
        for kubeconfig in (
            secret_kubeconfig("https://127.0.0.1:1"),  # unreachable
            yaml.safe_dump(broken_key),  # credentials that do not load
            yaml.safe_dump(with_exec),  # refused by policy
            "token: " + SECRET_TOKEN,  # not a kubeconfig at all
        ):
            refused = await api.client.post(
                "/v1/clusters", json=cluster_body("rt-refused", kubeconfig=kubeconfig)
            )
            assert refused.status_code == 400, refused.text
            responses.append(refused.text)

        accepted = await api.client.post(
            "/v1/clusters", json=cluster_body("rt-secret", kubeconfig=real)
        )
        assert accepted.status_code == 200, accepted.text
        responses.append(accepted.text)

        async def ready() -> bool:
            return (await api.client.get("/v1/clusters/rt-secret/status")).json()[
                "status"
            ] == "ready"

        await poll_until(ready, timeout=30, what="rt-secret to be ready")
        responses += await _everything_readable(api, "rt-secret")
        responses.append((await api.client.delete("/v1/clusters/rt-secret")).text)
        audit = api.audit_file.read_text()

    captured = capsys.readouterr()
    outputs = {
        "responses": "\n".join(responses),
        "stdout": captured.out,
        "stderr": captured.err,
        "log records": "\n".join(r.getMessage() for r in caplog.records),
        "audit": audit,
    }
    assert "rt-secret" in outputs["audit"]
    for where, text in outputs.items():
        for secret in (
            SECRET_TOKEN,
            key_data,
            key_pem.splitlines()[1],
            SECRET_VALUE,
            "apiVersion: v1",
        ):
            assert secret not in text, f"{secret[:12]}... leaked into {where}"


class _ExplodingService(MothershipService):
    """A service whose store fails mid-upsert (an unexpected error, not a ReconcilerError)."""

    async def upsert_cluster(self, spec: ClusterSpec) -> ClusterState:
        raise RuntimeError("database went away")


async def test_unexpected_errors_are_500_and_their_logs_hold_no_request_data(
    tmp_path: Path, tokens: Tokens, capsys: pytest.CaptureFixture[str]
) -> None:
    async with running_api(tmp_path, ApiSettings(tokens_file=tokens.path), run_loops=False) as api:
        service = _ExplodingService(api.engine.inventory, api.engine.repo, api.engine.notifier)
        app = create_app(
            service,
            settings=ApiSettings(tokens_file=tokens.path),
            check_kubeconfig=accept_kubeconfig,
            audit=quiet_audit(),
        )
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            response = await client.post(
                "/v1/clusters",
                json=cluster_body("rt-500", kubeconfig=secret_kubeconfig()),
                headers=tokens.header(Role.ADMIN),
            )
    assert response.status_code == 500
    assert response.json() == {"error": "internal error"}
    output = capsys.readouterr()
    assert "database went away" in output.out + output.err  # the traceback is logged ...
    for secret in (SECRET_TOKEN, SECRET_VALUE):  # ... without locals or request data
        assert secret not in output.out + output.err
