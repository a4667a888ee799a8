"""`POST /v1/operations/{schedulingID}/callback/{correlationID}`: component reconcilers report
progress (`running`, `failed`) and results (`success`, `error`) of the operations they run.

Only component reconcilers may call it: with a `callback_token` configured, exactly that bearer
token (compared in constant time, by the auth middleware before the body is read) and nothing
else; without one, the caller needs the operator role. On top of that, every callback must carry
the operation's own callback secret (header `X-Callback-Secret`, issued with the task): without it
403, whatever the bearer token; a callback for an unknown operation is refused the same way (403,
not 404: the answer tells nobody which operations exist). A callback for a final one is 400
(the component reconciler then stops working on it); `retryID` must be a UUID (400). Heartbeats
(`running`, `notstarted`) are not audited: one per running operation every few seconds would
drown the trail.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Path, Request, Response

from reconciler.api.auth import Role, requires, requires_token
from reconciler.api.context import ApiContext, context
from reconciler.api.errors import ApiError
from reconciler.api.middleware import AUDIT_SKIP
from reconciler.api.routes import errors
from reconciler.api.routing import scope_state
from reconciler.api.settings import ApiSettings
from reconciler.errors import ConflictError
from reconciler.model.remote import CALLBACK_SECRET_HEADER, CallbackMessage
from reconciler.model.status import OperationState

Ctx = Annotated[ApiContext, Depends(context)]
SchedulingID = Annotated[str, Path(alias="schedulingID", min_length=1)]
CorrelationID = Annotated[str, Path(alias="correlationID", min_length=1)]
CallbackSecret = Annotated[
    str,
    Header(
        alias=CALLBACK_SECRET_HEADER,
        description="The `callbackSecret` of the task this operation was handed over with",
    ),
]


def router(settings: ApiSettings, *, orphan_timeout: float) -> APIRouter:
    """The callback route, guarded by the callback token when one is configured."""
    guard = (
        requires_token(settings.callback_token)
        if settings.callback_token
        else requires(Role.OPERATOR)
    )
    api = APIRouter(tags=["internal"])

    @api.post(
        "/operations/{schedulingID}/callback/{correlationID}",
        response_class=Response,
        responses={200: {"description": "Recorded"}, **errors(400, 401, 403, 413, 500)},
        dependencies=[guard],
    )
    async def callback(
        scheduling_id: SchedulingID,
        correlation_id: CorrelationID,
        body: CallbackMessage,
        ctx: Ctx,
        request: Request,
        secret: CallbackSecret = "",
    ) -> Response:
        """Record a component reconciler's heartbeat or result for one operation."""
        if body.status.operation_state is OperationState.IN_PROGRESS:
            scope_state(request.scope)[AUDIT_SKIP] = True  # heartbeats: one every few seconds
        try:
            await ctx.service.callback(
                scheduling_id,
                correlation_id,
                body,
                secret=secret,
                orphan_timeout=orphan_timeout,
            )
        except ConflictError as exc:
            raise ApiError(400, str(exc)) from None
        return Response(status_code=200)

    return api
