"""`/v1/operations/{schedulingID}/{correlationID}/...`: stop an operation that has not started
(403 otherwise, as the original answered) and ask for its debug logs."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Response

from reconciler.api import schemas as s
from reconciler.api.auth import Role, requires
from reconciler.api.context import ApiContext, context
from reconciler.api.errors import ApiError
from reconciler.api.routes import AUTHED, errors
from reconciler.errors import ConflictError

router = APIRouter(tags=["operations"])
Ctx = Annotated[ApiContext, Depends(context)]
SchedulingID = Annotated[str, Path(alias="schedulingID", min_length=1)]
CorrelationID = Annotated[str, Path(alias="correlationID", min_length=1)]


@router.post(
    "/operations/{schedulingID}/{correlationID}/stop",
    response_class=Response,
    responses={
        200: {"description": "Stopped"},
        **errors(400, 404, 413, *AUTHED),
        403: {"model": s.ErrorBody, "description": "Not `new` any more, or role too low"},
    },
    dependencies=[requires(Role.OPERATOR)],
)
async def stop_operation(
    scheduling_id: SchedulingID,
    correlation_id: CorrelationID,
    ctx: Ctx,
    body: s.OperationStop | None = None,
) -> Response:
    """Stop an operation that is still `new` (it ends as an error with the given reason)."""
    try:
        await ctx.service.stop_operation(scheduling_id, correlation_id, body.reason if body else "")
    except ConflictError as exc:
        raise ApiError(403, str(exc)) from None
    return Response(status_code=200)


@router.put(
    "/operations/{schedulingID}/{correlationID}/debug",
    response_class=Response,
    responses={200: {"description": "Accepted"}, **errors(400, 404, *AUTHED)},
    dependencies=[requires(Role.OPERATOR)],
)
async def operation_debug(
    scheduling_id: SchedulingID, correlation_id: CorrelationID, ctx: Ctx
) -> Response:
    """Ask for debug logs of one operation. Accepted for compatibility; the engine has no
    per-operation log level yet, so this only checks that the operation exists."""
    await ctx.service.operation(scheduling_id, correlation_id)
    return Response(status_code=200)
