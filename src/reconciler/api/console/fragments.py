"""The console's data: HTML fragments the pages load and poll (viewer role, ETag per fragment).

Each fragment reads through the mothership's service, as the v1 routes do, and shows what the
v1 API would show the same caller: public statuses, failure reasons as stored (scrubbed when
written), configurations with secret values redacted, never a kubeconfig. Buttons exist only
for a role that may use them; the API they call checks the role again.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request
from starlette.responses import Response

from reconciler.api import schemas as s
from reconciler.api.auth import Role, RoleRequirement
from reconciler.api.console.diff import DiffBusy, DiffPool
from reconciler.api.console.kyma import read_kyma_view
from reconciler.api.console.rendering import fragment
from reconciler.api.context import ApiContext, context
from reconciler.api.errors import ApiError
from reconciler.api.principal import Principal
from reconciler.model.health import SHOWN, Health
from reconciler.model.status import ClusterStatus
from reconciler.store.fleet import PUBLIC_STATUSES, FleetQuery
from reconciler.util.clock import utcnow

router = APIRouter(prefix="/ui/fragments", include_in_schema=False)
Ctx = Annotated[ApiContext, Depends(context)]
Viewer = Annotated[Principal, Depends(RoleRequirement(Role.VIEWER))]
DIFFS = DiffPool()
RuntimeID = Annotated[str, Path(alias="runtimeID", min_length=1, pattern=s.RUNTIME_ID)]
PAGE_SIZE = 50
RUNS_SHOWN = 10
HISTORY_SHOWN = 50
EVER = dt.timedelta(days=36500)


def _can(principal: Principal) -> dict[str, bool]:
    """Which buttons this caller gets (the API refuses the rest anyway)."""
    return {
        "status": principal.role >= Role.OPERATOR,
        "rollback": principal.role >= Role.ADMIN,
        "delete": principal.role >= Role.ADMIN,
    }


@router.get("/me")
async def me(request: Request, principal: Viewer) -> Response:
    return fragment(request, "me.html", principal=principal)


@router.get("/fleet")
async def fleet(
    request: Request,
    ctx: Ctx,
    _: Viewer,
    status: Annotated[str, Query()] = "",
    health: Annotated[str, Query()] = "",
    q: Annotated[str, Query(max_length=200)] = "",
    sort: Annotated[str, Query()] = "runtime",
    order: Annotated[str, Query(alias="dir")] = "asc",
    number: Annotated[int, Query(alias="page", ge=1, le=1_000_000)] = 1,
) -> Response:
    try:
        wanted = ClusterStatus(status) if status else None
        query = FleetQuery(
            status=wanted,
            health=Health(health) if health else None,
            text=q.strip(),
            sort=sort,
            descending=order == "desc",
            page=number,
            size=PAGE_SIZE,
        )
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    result = await ctx.service.fleet(query)
    pages = max(1, -(-result.total // PAGE_SIZE))
    return fragment(
        request,
        "fleet.html",
        result=result,
        query=query,
        pages=pages,
        statuses=PUBLIC_STATUSES,
        healths=SHOWN,
    )


@router.get("/clusters/{runtimeID}/summary")
async def summary(request: Request, runtime_id: RuntimeID, ctx: Ctx, principal: Viewer) -> Response:
    state = await ctx.service.cluster(runtime_id)
    failures = await ctx.service.failures(state)
    return fragment(
        request,
        "summary.html",
        state=state,
        status=state.status.public,
        health=await ctx.service.health(runtime_id),
        failures=failures,
        can=_can(principal),
        disabled=state.status is ClusterStatus.RECONCILE_DISABLED,
        deleting=state.status.deleting,
    )


@router.get("/clusters/{runtimeID}/history")
async def history(request: Request, runtime_id: RuntimeID, ctx: Ctx, _: Viewer) -> Response:
    changes = await ctx.service.status_changes(runtime_id, EVER)
    return fragment(request, "history.html", changes=changes[:HISTORY_SHOWN], total=len(changes))


@router.get("/clusters/{runtimeID}/reconciliations")
async def runs(request: Request, runtime_id: RuntimeID, ctx: Ctx, _: Viewer) -> Response:
    await ctx.service.cluster(runtime_id)  # 404 for an unknown cluster
    found = await ctx.service.reconciliations(runtime_ids=[runtime_id], last=RUNS_SHOWN)
    detailed = [await ctx.service.reconciliation(item.scheduling_id) for item in found]
    return fragment(request, "reconciliations.html", runs=detailed, now=utcnow())


@router.get("/clusters/{runtimeID}/configs")
async def configs(request: Request, runtime_id: RuntimeID, ctx: Ctx, principal: Viewer) -> Response:
    state = await ctx.service.cluster(runtime_id)
    versions = await ctx.service.configs(runtime_id)
    return fragment(
        request,
        "configs.html",
        runtime_id=runtime_id,
        versions=versions,
        current=state.config_version,
        can=_can(principal),
    )


@router.get("/clusters/{runtimeID}/diff")
async def diff(
    request: Request,
    runtime_id: RuntimeID,
    ctx: Ctx,
    _: Viewer,
    left: Annotated[int, Query(alias="a", ge=1, le=2**63 - 1)],
    right: Annotated[int, Query(alias="b", ge=1, le=2**63 - 1)],
) -> Response:
    old = await ctx.service.cluster_at(runtime_id, left)
    new = await ctx.service.cluster_at(runtime_id, right)
    try:  # in a worker thread, bounded in input and time: never on the event loop
        rows = await DIFFS.diff(old.spec.kyma_config, new.spec.kyma_config)
    except DiffBusy as exc:
        raise ApiError(503, str(exc)) from None
    return fragment(request, "diff.html", rows=rows, left=left, right=right)


@router.get("/kyma")
async def kyma(request: Request, ctx: Ctx, _: Viewer) -> Response:
    view = await read_kyma_view(ctx.settings.console_kubeconfig, ctx.console_clients)
    return fragment(request, "kyma.html", view=view)
