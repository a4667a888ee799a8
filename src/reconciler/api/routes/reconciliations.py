"""`/v1/reconciliations...`: list (filters repeatable), info with operations, purge, debug.

The list shows each reconciliation's raw status (`*_retryable` included), as the original did,
and the cluster's shoot name from its metadata (looked up once per runtime in a request).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response

from reconciler.api import convert
from reconciler.api import schemas as s
from reconciler.api.auth import Role, requires
from reconciler.api.context import ApiContext, context
from reconciler.api.errors import ApiError
from reconciler.api.routes import AUTHED, errors
from reconciler.errors import NotFoundError
from reconciler.model.status import ClusterStatus

router = APIRouter(tags=["reconciliations"])
Ctx = Annotated[ApiContext, Depends(context)]
SchedulingID = Annotated[str, Path(alias="schedulingID", min_length=1)]
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]|$)")


def _moment(name: str, text: str | None) -> dt.datetime | None:
    """An RFC 3339 date-time filter (`2026-11-24T10:00:00Z`); one without a zone is taken as
    UTC (stored times are UTC). Numbers are refused, not read as Unix times (`before=0.5`)."""
    if text is None:
        return None
    try:
        if not DATE.match(text):
            raise ValueError(text)
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ApiError(400, f"{name}: not an RFC 3339 date-time") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


@router.get(
    "/reconciliations", dependencies=[requires(Role.VIEWER)], responses=errors(400, *AUTHED)
)
async def list_reconciliations(
    ctx: Ctx,
    runtime_ids: Annotated[list[str] | None, Query(alias="runtimeID")] = None,
    statuses: Annotated[list[ClusterStatus] | None, Query(alias="status")] = None,
    before: Annotated[str | None, Query(description="RFC 3339 date-time")] = None,
    after: Annotated[str | None, Query(description="RFC 3339 date-time")] = None,
    last: Annotated[int | None, Query(ge=0, le=100_000)] = None,
) -> list[s.ReconciliationOut]:
    """Newest first; `runtimeID` and `status` may be given several times."""
    found = await ctx.service.reconciliations(
        runtime_ids=runtime_ids or (),
        statuses=[status.value for status in statuses or ()],
        before=_moment("before", before),
        after=_moment("after", after),
        last=last or None,
    )
    shoot_names: dict[str, str] = {}
    for item in found:
        if item.runtime_id not in shoot_names:
            try:
                cluster = await ctx.service.cluster(item.runtime_id)
                shoot_names[item.runtime_id] = cluster.spec.metadata.shoot_name
            except NotFoundError:
                shoot_names[item.runtime_id] = ""
    return [convert.reconciliation(item, shoot_names[item.runtime_id]) for item in found]


@router.get(
    "/reconciliations/{schedulingID}/info",
    dependencies=[requires(Role.VIEWER)],
    responses=errors(400, 404, *AUTHED),
)
async def reconciliation_info(scheduling_id: SchedulingID, ctx: Ctx) -> s.ReconciliationInfo:
    reconciliation, operations = await ctx.service.reconciliation(scheduling_id)
    return convert.reconciliation_info(reconciliation, operations)


@router.put(
    "/reconciliations/{schedulingID}/debug",
    response_class=Response,
    responses={200: {"description": "Accepted"}, **errors(400, 404, *AUTHED)},
    dependencies=[requires(Role.OPERATOR)],
)
async def reconciliation_debug(scheduling_id: SchedulingID, ctx: Ctx) -> Response:
    """Ask for debug logs of every operation of the reconciliation. Accepted for compatibility;
    the engine has no per-operation log level yet, so this only checks that it exists."""
    await ctx.service.reconciliation(scheduling_id)
    return Response(status_code=200)


@router.delete(
    "/reconciliations/cluster/{runtimeID}",
    response_class=Response,
    responses={200: {"description": "Purged"}, **errors(400, *AUTHED)},
    dependencies=[requires(Role.OPERATOR)],
)
async def purge_reconciliations(
    runtime_id: Annotated[str, Path(alias="runtimeID", min_length=1, pattern=s.RUNTIME_ID)],
    ctx: Ctx,
) -> Response:
    """Delete the cluster's finished reconciliations (a running one is kept). Operators may
    purge, as the original allowed runtime operators to."""
    await ctx.service.delete_reconciliations(runtime_id)
    return Response(status_code=200)
