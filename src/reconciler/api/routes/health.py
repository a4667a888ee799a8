"""`/health/live` and `/health/ready`: open to everyone (probes carry no tokens).

Live means the process serves requests; ready means the readiness probe (the database answers)
succeeded within `ready_timeout`. A failing probe answers 503; its reason goes to the log only,
as these routes are open.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import structlog
from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from reconciler.api import schemas as s
from reconciler.api.context import ApiContext, context
from reconciler.api.errors import error_response
from reconciler.api.routes import errors

router = APIRouter(prefix="/health", tags=["health"])
Ctx = Annotated[ApiContext, Depends(context)]
log = structlog.get_logger()


@router.get("/live")
async def live() -> s.HealthOut:
    return s.HealthOut(status="live")


@router.get("/ready", response_model=s.HealthOut, responses=errors(503))
async def ready(ctx: Ctx) -> JSONResponse:
    try:
        ok = await asyncio.wait_for(ctx.ready(), ctx.settings.ready_timeout)
        reason = "" if ok else "readiness probe failed"
    except TimeoutError:
        ok, reason = False, f"readiness probe did not answer within {ctx.settings.ready_timeout}s"
    except Exception as exc:
        ok, reason = False, f"readiness probe failed: {type(exc).__name__}: {exc}"
    if not ok:
        log.warning("not ready", reason=reason)
        return error_response(503, "not ready")  # details only in the log: this route is open
    return JSONResponse({"status": "ready"})
