"""Which route a raw ASGI request will reach, found before FastAPI routes it.

The authentication and audit middlewares run outside the router (authentication must happen
before a body is read or parsed; the audit must see 401/413 answers too), so they resolve the
route themselves with the router's own matching: same templates, same path parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fastapi.routing import iter_route_contexts
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class RouteMatch:
    route: BaseRoute
    """The route as declared (an `APIRoute` carries its dependencies)."""
    template: str
    """The full path template, prefixes included (`/v1/clusters/{runtimeID}`)."""
    path_params: dict[str, Any] = field(default_factory=dict)


def routes_with_paths(routes: Sequence[BaseRoute]) -> list[tuple[BaseRoute, str]]:
    """Every route of the app, included routers flattened, with its full path template."""
    return [(c.original_route, str(c.path or "")) for c in iter_route_contexts(routes)]


def match_route(routes: Sequence[BaseRoute], scope: Scope) -> RouteMatch | None:
    """The route that fully matches path and method, as the router would pick it."""
    for context in iter_route_contexts(routes):
        match, child = context.matches(scope)
        if match is Match.FULL:
            template = str(context.path or scope.get("path", ""))
            return RouteMatch(context.original_route, template, dict(child.get("path_params", {})))
    return None


def allowed_methods(routes: Sequence[BaseRoute], scope: Scope) -> list[str]:
    """Every method some route serves at this path (for a 405's `Allow` header; several
    routes may share one path, e.g. POST and PUT `/v1/clusters`)."""
    methods: set[str] = set()
    for context in iter_route_contexts(routes):
        match, _ = context.matches(scope)
        if match is not Match.NONE:
            methods.update(getattr(context.original_route, "methods", None) or ())
    return sorted(methods)


def scope_state(scope: Scope) -> dict[str, Any]:
    """The per-request state dict (`request.state`), shared by middlewares and handlers."""
    state: dict[str, Any] = scope.setdefault("state", {})
    return state
