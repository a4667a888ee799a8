"""The console's pages: shells without data, open to everyone, and `whoami` for the sign-in.

A shell holds the layout, the sign-in check and the places fragments fill in (`fragments.py`,
viewer role): the browser keeps the token in sessionStorage and sends it as a bearer token with
each fragment request, so a page's HTML never holds fleet data or a credential, and the same
authenticators and roles guard the console as the API. The query of the fleet page (filter,
sort, page) is echoed into its form so a reload or a shared link shows the same view.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.responses import Response

from reconciler.api import schemas as s
from reconciler.api.auth import Role, RoleRequirement
from reconciler.api.console.rendering import page
from reconciler.api.principal import Principal
from reconciler.model.health import SHOWN
from reconciler.store.fleet import PUBLIC_STATUSES, SORT_KEYS

router = APIRouter(include_in_schema=False)
Viewer = Annotated[Principal, Depends(RoleRequirement(Role.VIEWER))]


@router.get("/ui")
async def console_root() -> Response:
    return RedirectResponse("/ui/", status_code=307)


@router.get("/ui/")
async def fleet_page(
    status: Annotated[str, Query()] = "",
    health: Annotated[str, Query()] = "",
    q: Annotated[str, Query(max_length=200)] = "",
    sort: Annotated[str, Query()] = "runtime",
    order: Annotated[str, Query(alias="dir")] = "asc",
    number: Annotated[int, Query(alias="page", ge=1)] = 1,
) -> Response:
    return page(
        "fleet_page.html",
        title="Fleet",
        statuses=[s.value for s in PUBLIC_STATUSES],
        healths=[h.value for h in SHOWN],
        form={
            "status": status if status in {s.value for s in PUBLIC_STATUSES} else "",
            "health": health if health in {h.value for h in SHOWN} else "",
            "q": q,
            "sort": sort if sort in SORT_KEYS else "runtime",
            "dir": "desc" if order == "desc" else "asc",
            "page": number,
        },
    )


@router.get("/ui/clusters/{runtimeID}")
async def cluster_page(
    runtime_id: Annotated[str, Path(alias="runtimeID", min_length=1, pattern=s.RUNTIME_ID)],
) -> Response:
    return page("cluster_page.html", title=f"Cluster {runtime_id}", runtime_id=runtime_id)


@router.get("/ui/kyma")
async def kyma_page() -> Response:
    return page("kyma_page.html", title="Kyma modules")


@router.get("/ui/signin")
async def signin_page() -> Response:
    return page("signin.html", title="Sign in")


@router.get("/ui/whoami")
async def whoami(principal: Viewer) -> Response:
    """Who the token belongs to: the sign-in page checks a token with it before keeping it."""
    return JSONResponse(
        {"subject": principal.subject, "role": principal.role.label},
        headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"},
    )
