"""Who may call what: bearer tokens (a static token file, or OIDC JWTs) mapped to the roles
`viewer` (read) < `operator` (status changes, stop operation, debug) < `admin` (everything).

Each route declares the role it needs with `requires(Role.X)`; `AuthMiddleware` reads that
declaration from the matched route and authenticates *before* the request body is read or
parsed, so an unauthenticated caller learns nothing about the input rules. Routes without a
declaration (health, metrics, OpenAPI, docs) are open. The route dependency re-checks the role,
so a route is never reachable without it even if the middleware is not installed.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml
from fastapi import Depends, HTTPException, Request
from fastapi.routing import APIRoute
from fastapi.security import HTTPBearer
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from reconciler.api.errors import error_response
from reconciler.api.routing import match_route, routes_with_paths, scope_state
from reconciler.api.settings import ApiConfigError, ApiSettings
from reconciler.errors import ReconcilerError
from reconciler.web.bearer import CHALLENGE, bearer_token

PRINCIPAL = "principal"


class Role(enum.IntEnum):
    NONE = 0
    VIEWER = 1
    OPERATOR = 2
    ADMIN = 3

    @classmethod
    def parse(cls, name: str) -> Role:
        try:
            role = cls[name.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown role {name!r}: expected viewer, operator or admin") from None
        if role is Role.NONE:
            raise ValueError("role 'none' cannot be granted")
        return role

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Principal:
    subject: str
    role: Role


class AuthError(ReconcilerError):
    """The caller is not authenticated (missing, malformed, expired or unknown token)."""


class AuthUnavailable(ReconcilerError):
    """Tokens cannot be verified right now (e.g. the JWKS cannot be fetched)."""


class Authenticator(Protocol):
    async def authenticate(self, token: str | None) -> Principal: ...


class NoAuth:
    """`auth=none`: every caller is an admin; there is nothing to check."""

    async def authenticate(self, token: str | None) -> Principal:
        return Principal("anonymous", Role.ADMIN)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class StaticTokens:
    """Tokens from a file. Only SHA-256 digests are kept in memory; the file may hold either
    the token itself or `sha256:<hex digest>` of it as the key."""

    def __init__(self, principals: dict[str, Principal]) -> None:
        self._by_digest = principals

    @classmethod
    def from_file(cls, path: Path) -> StaticTokens:
        try:
            text = path.read_text()
        except OSError as exc:
            raise ApiConfigError(f"token file {path}: {exc.strerror or exc}") from None
        try:
            data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        except (json.JSONDecodeError, yaml.YAMLError):
            raise ApiConfigError(f"token file {path} is not valid YAML/JSON") from None
        if not isinstance(data, dict) or not data:
            raise ApiConfigError(f"token file {path} must map tokens to {{subject, role}}")
        principals: dict[str, Principal] = {}
        for number, (key, entry) in enumerate(data.items(), start=1):
            where = f"token file {path}, entry {number}"
            if not isinstance(key, str) or not key or not isinstance(entry, dict):
                raise ApiConfigError(f"{where}: expected `<token>: {{subject, role}}`")
            subject, role = entry.get("subject"), entry.get("role")
            if not isinstance(subject, str) or not subject or not isinstance(role, str):
                raise ApiConfigError(f"{where}: needs a subject and a role")
            try:
                parsed = Role.parse(role)
            except ValueError as exc:
                raise ApiConfigError(f"{where}: {exc}") from None
            digest = key[len("sha256:") :].lower() if key.startswith("sha256:") else _digest(key)
            principals[digest] = Principal(subject, parsed)
        return cls(principals)

    async def authenticate(self, token: str | None) -> Principal:
        if not token:
            raise AuthError("missing bearer token")
        principal = self._by_digest.get(_digest(token))
        if principal is None:
            raise AuthError("invalid bearer token")
        return principal


def build_authenticator(settings: ApiSettings) -> Authenticator:
    """The authenticator the settings ask for (ApiConfigError when they ask for none)."""
    mode = settings.auth_mode()
    if mode == "none":
        return NoAuth()
    if mode == "static":
        if settings.tokens_file is None:
            raise ApiConfigError("auth=static needs tokens_file")
        return StaticTokens.from_file(settings.tokens_file)
    from reconciler.api.oidc import OidcAuthenticator

    return OidcAuthenticator.from_settings(settings)


_bearer_scheme = HTTPBearer(auto_error=False, description="A static token or an OIDC JWT.")


class RoleRequirement:
    """Route dependency declaring (and re-checking) the role a route needs."""

    def __init__(self, role: Role) -> None:
        self.role = role

    async def __call__(self, request: Request, _: Any = Depends(_bearer_scheme)) -> Principal:
        principal = getattr(request.state, PRINCIPAL, None)
        if not isinstance(principal, Principal):
            raise HTTPException(401, "missing bearer token", headers=CHALLENGE)
        if principal.role < self.role:
            raise HTTPException(403, _forbidden(principal, self.role))
        return principal


def requires(role: Role) -> Any:
    """`dependencies=[requires(Role.ADMIN)]` on a route."""
    return Depends(RoleRequirement(role))


def route_role(route: BaseRoute) -> Role | None:
    """The role a route declared with `requires`, None for open routes."""
    if not isinstance(route, APIRoute):
        return None
    for dependency in route.dependant.dependencies:
        if isinstance(dependency.call, RoleRequirement):
            return dependency.call.role
    return None


@dataclass(frozen=True)
class RouteRole:
    method: str
    path: str
    role: Role


def route_roles(routes: Sequence[BaseRoute]) -> list[RouteRole]:
    """Every (method, path template) that needs a role: the authorization table."""
    table: list[RouteRole] = []
    for route, path in routes_with_paths(routes):
        role = route_role(route)
        if role is not None and isinstance(route, APIRoute):
            table.extend(RouteRole(method, path, role) for method in sorted(route.methods or ()))
    return table


def _forbidden(principal: Principal, role: Role) -> str:
    return f"{principal.subject} has role {principal.role.label}; this needs {role.label}"


class AuthMiddleware:
    """Authenticates and authorizes every request to a route that declares a role."""

    def __init__(self, app: ASGIApp, *, routes: Sequence[BaseRoute], auth: Authenticator) -> None:
        self.app = app
        self.routes = routes
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        matched = match_route(self.routes, scope)
        role = route_role(matched.route) if matched else None
        if role is None:
            await self.app(scope, receive, send)
            return
        try:
            principal = await self.auth.authenticate(bearer_token(scope))
        except AuthError as exc:
            await error_response(401, str(exc), headers=CHALLENGE)(scope, receive, send)
            return
        except AuthUnavailable as exc:
            await error_response(503, str(exc))(scope, receive, send)
            return
        scope_state(scope)[PRINCIPAL] = principal
        if principal.role < role:
            await error_response(403, _forbidden(principal, role))(scope, receive, send)
            return
        await self.app(scope, receive, send)
