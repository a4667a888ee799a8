"""The component reconciler service's routes: `POST /v1/run`, health and metrics.

Handlers reach the instance's `ComponentService` through the `component_service` dependency
(stored on the app by `create_app`), as the mothership API's handlers reach their context. Only
`/v1/run` needs the shared token; it is checked before the body is read, and the body is parsed
in the handler (not by FastAPI) so that order holds. Invalid bodies answer 400 naming the field.
"""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import ValidationError

from reconciler.model.remote import RemoteTask
from reconciler.remote.pool import Admission
from reconciler.remote.service import ComponentService
from reconciler.web.bearer import BearerRefused
from reconciler.web.errors import error_response, validation_message


def component_service(request: Request) -> ComponentService:
    return cast(ComponentService, request.app.state.service)


Service = Annotated[ComponentService, Depends(component_service)]


def authorize(request: Request, svc: Service) -> None:
    """The shared token, when one is configured (else anonymous access was allowed)."""
    if svc.token is None:
        return
    try:
        svc.token.check(request.scope)
    except BearerRefused as exc:
        svc.metrics.runs_rejected.labels(reason="unauthorized").inc()
        raise HTTPException(exc.status, str(exc), headers=exc.headers) from None


def _pool_headers(svc: ComponentService) -> dict[str, str]:
    return {"X-Pool-Busy": str(svc.pool.busy), "X-Pool-Size": str(svc.pool.size)}


router = APIRouter()


@router.post("/v1/run", dependencies=[Depends(authorize)])
async def run(request: Request, svc: Service) -> Response:
    """Take a task (the body is a `RemoteTask`; parsed here so auth is checked first)."""
    try:
        task = RemoteTask.model_validate_json(await request.body())
    except ValidationError as exc:
        svc.metrics.runs_rejected.labels(reason="invalid").inc()
        return error_response(400, validation_message(exc))
    problem = svc.check(task)
    if problem is not None:
        svc.metrics.runs_rejected.labels(reason="invalid").inc()
        return error_response(400, problem)
    admission = svc.submit(task)
    if admission is Admission.BUSY:
        svc.metrics.runs_rejected.labels(reason="busy").inc()
        return error_response(
            429,
            f"worker pool full ({svc.pool.size} tasks)",
            headers={"Retry-After": "1", **_pool_headers(svc)},
        )
    if admission is Admission.SHUTTING_DOWN:
        svc.metrics.runs_rejected.labels(reason="shutting_down").inc()
        return error_response(
            503, "component reconciler shutting down", headers={"Retry-After": "1"}
        )
    return JSONResponse({"status": "accepted"}, headers=_pool_headers(svc))


@router.get("/health/live")
async def live() -> dict[str, str]:
    return {"status": "live"}


@router.get("/health/ready")
async def ready(svc: Service) -> JSONResponse:
    if not svc.pool.accepting:
        return JSONResponse({"status": "shutting down"}, status_code=503)
    return JSONResponse(
        {"status": "ready", "busy": svc.pool.busy, "workers": svc.pool.size},
        headers=_pool_headers(svc),
    )


@router.get("/metrics")
async def metrics(svc: Service) -> Response:
    return Response(generate_latest(svc.metrics.registry), media_type=CONTENT_TYPE_LATEST)
