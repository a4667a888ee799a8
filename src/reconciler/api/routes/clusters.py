"""`/v1/clusters...`: upsert, delete, forget, state, status (read and set), health,
configuration, history, rollback to an earlier configuration version.

An upsert is checked completely before anything is stored: body shape (FastAPI/pydantic), the
kubeconfig (parsed, no host access), the pluggable spec validator (unknown components) and,
last, whether the kubeconfig's cluster answers (the only network call). The store writes a new
version in one transaction, so a rejected request leaves no trace. Both spellings clients use
are served: `config`/`configs` in the status URL, the status-change offset as a query parameter
or a path segment.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request

from reconciler.api import convert
from reconciler.api import schemas as s
from reconciler.api.auth import Role, requires
from reconciler.api.context import ApiContext, context
from reconciler.api.durations import parse_go_duration
from reconciler.api.errors import ApiError
from reconciler.api.middleware import AUDIT_RUNTIME_ID
from reconciler.api.routes import AUTHED, errors
from reconciler.api.routing import scope_state
from reconciler.errors import ConflictError, KubeconfigError, ReconcilerError
from reconciler.kube import kubeconfig
from reconciler.model.cluster import ClusterState
from reconciler.model.status import ClusterStatus, StatusTransitionError

router = APIRouter(tags=["clusters"])
Ctx = Annotated[ApiContext, Depends(context)]
RuntimeID = Annotated[str, Path(alias="runtimeID", min_length=1, pattern=s.RUNTIME_ID)]
ConfigVersion = Annotated[int, Path(alias="configVersion", ge=1, le=2**63 - 1)]
DEFAULT_OFFSET = "168h"


@router.get(
    "/clusters",
    response_model=list[s.ClusterListItem],
    responses=errors(*AUTHED),
    dependencies=[requires(Role.VIEWER)],
)
async def list_clusters(ctx: Ctx) -> list[s.ClusterListItem]:
    """Every cluster that is not deleted, with its latest versions, (public) status and
    health. Not in the original API; the admin CLI's `cluster list` uses it."""
    healths = await ctx.service.healths()
    return [
        s.ClusterListItem(
            runtimeID=head.runtime_id,
            status=head.status.public,
            clusterVersion=head.cluster_version,
            configurationVersion=head.config_version,
            statusChanged=head.status_changed,
            health=convert.cluster_health(h) if (h := healths.get(head.runtime_id)) else None,
        )
        for head in await ctx.service.clusters()
    ]


async def _respond(ctx: ApiContext, request: Request, state: ClusterState) -> s.ClusterResponse:
    failures = await ctx.service.failures(state)
    health = await ctx.service.health(state.runtime_id)
    return convert.cluster_response(state, failures, ctx.base_url(request), health)


async def upsert_cluster(body: s.ClusterIn, request: Request, ctx: Ctx) -> s.ClusterResponse:
    """Create or update a cluster (POST and PUT behave the same)."""
    scope_state(request.scope)[AUDIT_RUNTIME_ID] = body.runtimeID
    spec = convert.spec_from(body)
    scrub = kubeconfig.scrubber(spec.kubeconfig, spec.secret_values())
    # every local check first; contacting the kubeconfig's server comes last
    try:
        kubeconfig.check_text(
            spec.kubeconfig, allow_host_access=ctx.settings.kubeconfig_allow_host_access
        )
    except KubeconfigError as exc:
        raise ApiError(400, f"kubeconfig not accepted: {exc}") from None
    try:
        await ctx.validate_spec(spec)
    except (ReconcilerError, ValueError) as exc:
        raise ApiError(400, scrub(str(exc))) from None
    try:
        await ctx.check_kubeconfig(spec.kubeconfig)
    except (ReconcilerError, ValueError, OSError) as exc:
        raise ApiError(400, f"kubeconfig not accepted: {scrub(str(exc))}") from None
    state = await ctx.service.upsert_cluster(spec)
    return await _respond(ctx, request, state)


for method, operation_id in (("POST", "createCluster"), ("PUT", "updateCluster")):
    router.add_api_route(
        "/clusters",
        upsert_cluster,
        methods=[method],
        operation_id=operation_id,
        dependencies=[requires(Role.ADMIN)],
        responses=errors(400, 413, *AUTHED),
    )


@router.delete(
    "/clusters/{runtimeID}",
    dependencies=[requires(Role.ADMIN)],
    responses=errors(400, 404, *AUTHED),
)
async def delete_cluster(runtime_id: RuntimeID, request: Request, ctx: Ctx) -> s.ClusterResponse:
    """Mark the cluster for deletion (`delete_pending`); 404 for an unknown cluster."""
    return await _respond(ctx, request, await ctx.service.delete_cluster(runtime_id))


@router.post(
    "/clusters/{runtimeID}/forget",
    dependencies=[requires(Role.ADMIN)],
    responses=errors(400, 404, 409, 413, *AUTHED),
)
async def forget_cluster(
    runtime_id: RuntimeID, request: Request, ctx: Ctx, body: s.ForgetRequest | None = None
) -> s.ClusterResponse:
    """Remove a cluster whose infrastructure is gone, without uninstalling anything: its
    inventory is marked deleted (`deleted`) and an active run ends. 409 while the cluster is
    healthy or progressing (its apiserver answers) unless `confirm` is true; 404 for an
    unknown cluster. Audited like every change. Not in the original API."""
    confirm = body.confirm if body is not None else False
    try:
        state = await ctx.service.forget_cluster(runtime_id, confirm=confirm)
    except ConflictError as exc:
        raise ApiError(409, str(exc)) from None
    return await _respond(ctx, request, state)


@router.get(
    "/clusters/{runtimeID}/health",
    dependencies=[requires(Role.VIEWER)],
    responses=errors(400, 404, *AUTHED),
)
async def cluster_health(runtime_id: RuntimeID, ctx: Ctx) -> s.ClusterHealthOut:
    """The cluster's health beside its wire status: what its latest finished run proved
    (failing since when, how many failed runs in a row, the root-cause component and reason,
    the last success). Not in the original API."""
    return convert.cluster_health(await ctx.service.health(runtime_id))


@router.get(
    "/clusters/state",
    dependencies=[requires(Role.VIEWER)],
    responses=errors(400, 404, *AUTHED),
)
async def cluster_state(
    ctx: Ctx,
    runtime_id: Annotated[str | None, Query(alias="runtimeID")] = None,
    scheduling_id: Annotated[str | None, Query(alias="schedulingID")] = None,
    correlation_id: Annotated[str | None, Query(alias="correlationID")] = None,
) -> s.ClusterStateResponse:
    """The latest state, or the one a reconciliation / operation worked on."""
    if not (runtime_id or scheduling_id or correlation_id):
        raise ApiError(400, "give one of runtimeID, schedulingID, correlationID")
    state = await ctx.service.state_by(
        runtime_id=runtime_id, scheduling_id=scheduling_id, correlation_id=correlation_id
    )
    return convert.cluster_state(state)


@router.get(
    "/clusters/{runtimeID}/status",
    dependencies=[requires(Role.VIEWER)],
    responses=errors(400, 404, *AUTHED),
)
async def cluster_status(runtime_id: RuntimeID, request: Request, ctx: Ctx) -> s.ClusterResponse:
    return await _respond(ctx, request, await ctx.service.cluster(runtime_id))


@router.put(
    "/clusters/{runtimeID}/status",
    status_code=201,
    dependencies=[requires(Role.OPERATOR)],
    responses=errors(400, 404, 413, *AUTHED),
)
async def set_cluster_status(
    runtime_id: RuntimeID, body: s.StatusUpdate, request: Request, ctx: Ctx
) -> s.ClusterResponse:
    """Disable (`reconcile_disabled`), enable (`ready`) or force a run (`reconcile_pending`)."""
    try:
        state = await ctx.service.set_status(runtime_id, ClusterStatus(body.status.value))
    except (ConflictError, StatusTransitionError) as exc:
        raise ApiError(400, str(exc)) from None
    return await _respond(ctx, request, state)


@router.get(
    "/clusters/{runtimeID}/config/{configVersion}",
    dependencies=[requires(Role.VIEWER)],
    responses=errors(400, 404, *AUTHED),
)
async def cluster_config(
    runtime_id: RuntimeID, config_version: ConfigVersion, ctx: Ctx
) -> s.KymaConfigOut:
    """The Kyma configuration of that version (secret values redacted)."""
    state = await ctx.service.cluster_at(runtime_id, config_version)
    return convert.kyma_config(state.spec.kyma_config)


@router.get(
    "/clusters/{runtimeID}/configs",
    dependencies=[requires(Role.VIEWER)],
    responses=errors(400, 404, *AUTHED),
)
async def cluster_configs(
    runtime_id: RuntimeID,
    ctx: Ctx,
    last: Annotated[int, Query(ge=1, le=1000, description="How many, newest first")] = 100,
) -> list[s.ConfigVersionOut]:
    """The cluster's configuration versions, newest first; a rollback names the version it
    restored (`restoredFrom`). Not in the original API."""
    return convert.config_versions(await ctx.service.configs(runtime_id, last=last))


@router.post(
    "/clusters/{runtimeID}/config/{configVersion}/restore",
    status_code=201,
    dependencies=[requires(Role.ADMIN)],
    responses=errors(400, 404, 409, *AUTHED),
)
async def restore_config(
    runtime_id: RuntimeID, config_version: ConfigVersion, request: Request, ctx: Ctx
) -> s.RollbackResponse:
    """Roll back: store a new configuration version equal to `configVersion` and reconcile
    the cluster to it (a disabled cluster keeps it until enabled). 404 for an unknown cluster
    or version, 409 for a cluster being deleted; nothing is stored then. Not in the original
    API."""
    state = await ctx.service.restore_config(runtime_id, config_version)
    answer = await _respond(ctx, request, state)
    return s.RollbackResponse(**answer.model_dump(), restoredFrom=config_version)


async def config_status(
    runtime_id: RuntimeID, config_version: ConfigVersion, request: Request, ctx: Ctx
) -> s.ClusterResponse:
    """The `statusURL` the broker polls: that version's own status (an older version reports
    how it ended, not the cluster's current status)."""
    state = await ctx.service.config_status(runtime_id, config_version)
    return await _respond(ctx, request, state)


for segment in ("configs", "config"):
    router.add_api_route(
        f"/clusters/{{runtimeID}}/{segment}/{{configVersion}}/status",
        config_status,
        methods=["GET"],
        operation_id=f"clusterStatusOf{segment.capitalize()}Version",
        dependencies=[requires(Role.VIEWER)],
        responses=errors(400, 404, *AUTHED),
    )


async def _changes(ctx: ApiContext, runtime_id: str, offset: str) -> s.StatusChangesResponse:
    try:
        since = parse_go_duration(offset)
    except ValueError as exc:
        raise ApiError(400, f"offset: {exc}") from None
    return convert.status_changes(await ctx.service.status_changes(runtime_id, since))


@router.get(
    "/clusters/{runtimeID}/statusChanges",
    dependencies=[requires(Role.VIEWER)],
    responses=errors(400, 404, *AUTHED),
)
async def status_changes(
    runtime_id: RuntimeID,
    ctx: Ctx,
    offset: Annotated[str, Query(description="Go duration, e.g. 168h (default)")] = DEFAULT_OFFSET,
) -> s.StatusChangesResponse:
    """Status history, newest first, within `offset` of now."""
    return await _changes(ctx, runtime_id, offset)


@router.get(
    "/clusters/{runtimeID}/statusChanges/{offset}",
    dependencies=[requires(Role.VIEWER)],
    responses=errors(400, 404, *AUTHED),
)
async def status_changes_in_path(
    runtime_id: RuntimeID, offset: Annotated[str, Path()], ctx: Ctx
) -> list[s.StatusChangeOut]:
    """As `statusChanges?offset=`, with the offset as a path segment (the broker's spelling),
    answered as a bare array: the broker's client decodes it so."""
    return (await _changes(ctx, runtime_id, offset)).statusChanges
