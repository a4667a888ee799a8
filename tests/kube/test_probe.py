"""Checking a client's kubeconfig fetches its server but never reads the answer back (SSRF):
only the status code and its reason, and every upstream body copied into an error is capped."""

from __future__ import annotations

import pytest
import yaml
from fastapi import FastAPI
from fastapi.responses import HTMLResponse, JSONResponse

from reconciler.errors import ClusterUnreachable, KubeApiError
from reconciler.kube.client import KubeClient
from reconciler.kube.probe import connect_check
from reconciler.util.secrecy import EXCERPT_LIMIT
from tests.remote.support import serve_app

INTERNAL = "INTERNAL-PAGE-CONTENT " * 250  # ~5 KB, as the probe got back


def internal_service() -> FastAPI:
    app = FastAPI()

    @app.get("/version")
    async def version() -> HTMLResponse:
        return HTMLResponse(f"<html>{INTERNAL}</html>", status_code=404)

    @app.get("/ok/version")
    async def page() -> HTMLResponse:
        return HTMLResponse(f"<html>{INTERNAL}</html>")

    @app.get("/api/v1/big")
    async def big() -> JSONResponse:
        return JSONResponse(
            {"kind": "Status", "apiVersion": "v1", "message": INTERNAL}, status_code=500
        )

    @app.get("/api/v1/html")
    async def html() -> HTMLResponse:
        return HTMLResponse(f"<html>{INTERNAL}</html>", status_code=403)

    @app.get("/api/v1/json")
    async def json_page() -> JSONResponse:
        return JSONResponse({"error": INTERNAL, "message": INTERNAL}, status_code=500)

    @app.get("/api/v1/ok")
    async def ok_page() -> HTMLResponse:
        return HTMLResponse(f"<html>{INTERNAL}</html>")

    return app


def kubeconfig(server: str) -> str:
    return yaml.safe_dump(
        {
            "clusters": [{"name": "c", "cluster": {"server": server}}],
            "users": [{"name": "u", "user": {"token": "t0ken-value"}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "x",
        }
    )


async def test_a_checked_kubeconfig_reports_only_status_and_reason_of_what_answered() -> None:
    check = connect_check(5.0)
    async with serve_app(internal_service()) as url:
        with pytest.raises(ClusterUnreachable) as not_found:
            await check(kubeconfig(url))
        with pytest.raises(ClusterUnreachable) as not_kubernetes:
            await check(kubeconfig(f"{url}/ok"))
    assert "404 Not Found" in str(not_found.value)
    assert "did not answer like a Kubernetes apiserver" in str(not_kubernetes.value)
    for raised in (not_found, not_kubernetes):
        assert "INTERNAL-PAGE" not in str(raised.value)


async def refused(path: str) -> KubeApiError:
    """What the client raises for a GET of `path` on the internal service."""
    async with (
        serve_app(internal_service()) as url,
        KubeClient.from_kubeconfig(kubeconfig(url), text=True) as client,
    ):
        with pytest.raises(KubeApiError) as raised:
            await client.request("GET", path)
    return raised.value


async def test_upstream_bodies_copied_into_errors_are_capped() -> None:
    error = await refused("/api/v1/big")
    assert error.status == 500
    assert len(str(error)) <= EXCERPT_LIMIT + len(" [truncated]")


@pytest.mark.parametrize(
    ("path", "status", "phrase"),
    [("/api/v1/html", 403, "Forbidden"), ("/api/v1/json", 500, "Internal Server Error")],
)
async def test_an_error_that_is_no_kubernetes_status_names_only_its_http_status(
    path: str, status: int, phrase: str
) -> None:
    """Every user of the client (mothership runs, operator, infrastructure manager) reports
    these errors in statuses and failure reasons: an internal page never reaches them."""
    async with (
        serve_app(internal_service()) as url,
        KubeClient.from_kubeconfig(kubeconfig(url), text=True) as client,
    ):
        with pytest.raises(KubeApiError) as raised:
            await client.request("GET", path)
        with pytest.raises(KubeApiError) as watched:
            async for _ in client.watch(path, {}):
                pass
    for error in (raised.value, watched.value):
        assert error.status == status
        assert error.reason == "NotKubernetes"
        assert f"HTTP {status} {phrase}" in str(error)
        assert "not from a Kubernetes apiserver" in str(error)
        assert "INTERNAL" not in str(error)


async def test_a_success_that_is_not_json_is_an_error_without_its_body() -> None:
    error = await refused("/api/v1/ok")
    assert "HTTP 200 OK" in str(error)
    assert "INTERNAL" not in str(error)
