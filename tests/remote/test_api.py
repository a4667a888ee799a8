"""`POST /v1/run` admission: authentication, body validation naming the field, component filter,
health and metrics. No task here reaches a cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from reconciler.remote.app import create_app
from reconciler.remote.settings import ComponentSettings
from tests.remote.support import running_service, settings, task_body

KUBECONFIG = "apiVersion: v1\nkind: Config\n"
DEEP: Any = "leaf"
for _ in range(100):  # deeper than 64; past ~200 the JSON parser itself refuses
    DEEP = {"nested": DEEP}


def body(**changes: Any) -> dict[str, Any]:
    base = task_body(
        chart="/nonexistent/chart",
        namespace="ns",
        kubeconfig=KUBECONFIG,
        callback_url="http://127.0.0.1:9/v1/operations/s/callback/c",
    )
    return {**base, **changes}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"component": ""}, "component"),
        ({"namespace": None}, "namespace"),
        ({"type": "upgrade"}, "type"),
        ({"componentConfiguration": {"maxRetries": -1}}, "componentConfiguration.maxRetries"),
        ({"timeout": "soon"}, "timeout"),
        ({"callbackURL": "ftp://mothership/cb"}, "callbackURL"),
        ({"kubeconfig": ""}, "kubeconfig"),
        ({"kubeconfig": "just text"}, "kubeconfig"),
        ({"configuration": {"deep": DEEP}}, "configuration"),
    ],
)
async def test_invalid_body_is_400_naming_the_field(
    tmp_path: Path, change: dict[str, Any], field: str
) -> None:
    async with running_service(settings(tmp_path)) as (app, client):
        response = await client.post("/v1/run", json=body(**change))
        assert response.status_code == 400, response.text
        assert response.json()["error"].startswith(f"{field}: ")
        assert app.state.service.pool.busy == 0


async def test_missing_field_and_broken_json_are_400(tmp_path: Path) -> None:
    async with running_service(settings(tmp_path)) as (_, client):
        missing = body()
        del missing["correlationID"]
        response = await client.post("/v1/run", json=missing)
        assert response.status_code == 400
        assert response.json() == {"error": "correlationID: Field required"}
        broken = await client.post(
            "/v1/run", content=b"{not json", headers={"Content-Type": "application/json"}
        )
        assert broken.status_code == 400
        assert broken.json()["error"].startswith("body: malformed JSON")


async def test_task_for_a_component_not_served_here_is_400_naming_it(tmp_path: Path) -> None:
    async with running_service(settings(tmp_path, components=["istio", "eventing"])) as (_, c):
        response = await c.post("/v1/run", json=body(component="serverless"))
    assert response.status_code == 400
    assert response.json()["error"] == (
        "component: serverless is not served by this reconciler (it serves istio, eventing)"
    )


@pytest.mark.parametrize(
    ("authorization", "status"),
    [(None, 401), ("Bearer wrong-token", 403), ("Basic czNjcmV0", 401), ("Bearer ", 401)],
)
async def test_run_without_the_shared_token_is_refused_before_the_body_is_read(
    tmp_path: Path, authorization: str | None, status: int
) -> None:
    async with running_service(settings(tmp_path)) as (app, client):
        headers = {} if authorization is None else {"Authorization": authorization}
        client.headers.pop("Authorization")
        response = await client.post("/v1/run", content=b"{not json", headers=headers)
        assert response.status_code == status
        assert "error" in response.json()
        assert app.state.service.pool.busy == 0


async def test_anonymous_access_must_be_allowed_explicitly(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no token configured"):
        ComponentSettings(charts_cache=tmp_path)
    open_settings = ComponentSettings(charts_cache=tmp_path, allow_anonymous=True)
    app = create_app(open_settings)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://c") as client,
    ):
        response = await client.post("/v1/run", json=body(component=""))
    assert response.status_code == 400  # past authentication, stopped by validation


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RECONCILER_COMPONENT_TOKEN", "t")
    monkeypatch.setenv("RECONCILER_COMPONENT_COMPONENTS", "istio, eventing")
    monkeypatch.setenv("RECONCILER_COMPONENT_WORKERS", "3")
    loaded = ComponentSettings(charts_cache=tmp_path)
    assert loaded.components == ["istio", "eventing"]
    assert loaded.workers == 3
    assert loaded.outgoing_token == "t"
    assert "'t'" not in repr(loaded)


async def test_health_and_metrics(tmp_path: Path) -> None:
    async with running_service(settings(tmp_path, workers=4)) as (app, client):
        assert (await client.get("/health/live")).json() == {"status": "live"}
        ready = await client.get("/health/ready")
        assert ready.status_code == 200
        assert ready.json() == {"status": "ready", "busy": 0, "workers": 4}
        metrics = await client.get("/metrics")
        assert metrics.status_code == 200
        assert "reconciler_component_pool_size 4.0" in metrics.text
        app.state.service.pool.accepting = False
        assert (await client.get("/health/ready")).status_code == 503
        refused = await client.post("/v1/run", json=body())
        assert refused.status_code == 503
