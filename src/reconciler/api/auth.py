"""Who may call what: bearer tokens (a static token file and/or OIDC JWTs) and client identities
(mutual TLS, or a trusted proxy's identity header) mapped to the roles `viewer` (read) <
`operator` (status changes, stop operation, debug, purge) < `admin` (everything).

Each route declares what it needs with `requires(Role.X)` (or `requires_token(...)` for the
component reconcilers' callback route). `AuthMiddleware` reads that declaration from the matched
route and authenticates *before* the request body is read or parsed, so an unauthenticated
caller learns nothing about the input rules. Routes without a declaration (health, OpenAPI,
docs) are open. The route dependency re-checks, so a route is never reachable without it even if
the middleware is not installed. All configured authenticators work together: a request with a
bearer token is judged by its token, one without by its client identity.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from fastapi import Depends, HTTPException, Request
from fastapi.routing import APIRoute
from fastapi.security import HTTPBearer
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from reconciler.api.errors import error_response
from reconciler.api.identity import ClientIdentities
from reconciler.api.oidc import OidcAuthenticator
from reconciler.api.principal import Authenticator, AuthError, AuthUnavailable, Principal, Role
from reconciler.api.routing import match_route, routes_with_paths, scope_state
from reconciler.api.settings import ApiConfigError, ApiSettings
from reconciler.web.bearer import CHALLENGE, BearerRefused, SharedToken, bearer_token

__all__ = ["AuthError", "AuthUnavailable", "Authenticator", "Principal", "Role", "bearer_token"]
PRINCIPAL = "principal"
CALLBACK_SUBJECT = "component-reconciler"


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


class TokenChain:
    """Several token authenticators together (static tokens, then OIDC): the first that
    accepts the token wins. A refusal names the JWT problem for a JWT, else the first one."""

    def __init__(self, authenticators: Sequence[Authenticator]) -> None:
        self.authenticators = list(authenticators)

    async def authenticate(self, token: str | None) -> Principal:
        errors: list[AuthError | AuthUnavailable] = []
        for authenticator in self.authenticators:
            try:
                return await authenticator.authenticate(token)
            except (AuthError, AuthUnavailable) as exc:
                errors.append(exc)
        if not errors:
            raise AuthError("missing bearer token")
        looks_like_jwt = bool(token) and str(token).count(".") == 2
        raise errors[-1] if looks_like_jwt else errors[0]


class RequestAuthenticator:
    """Authenticates a request: by its bearer token when it has one, else by its client
    identity (certificate or trusted proxy header), else 401."""

    def __init__(self, tokens: Authenticator | None, identities: ClientIdentities | None) -> None:
        self.tokens = tokens
        self.identities = identities

    @property
    def open(self) -> bool:
        return isinstance(self.tokens, NoAuth)

    async def authenticate(self, scope: Scope) -> Principal:
        token = bearer_token(scope)
        if token is None and self.identities is not None:
            principal = self.identities.identify(scope)
            if principal is not None:
                return principal
        if self.tokens is None:
            raise AuthError("missing client certificate (bearer tokens are not configured)")
        return await self.tokens.authenticate(token)


def build_authenticator(
    settings: ApiSettings, tokens: Authenticator | None = None
) -> RequestAuthenticator:
    """Every authenticator the settings configure (ApiConfigError when they configure none).
    `tokens` replaces the token authenticators the settings describe."""
    if settings.auth == "none":
        return RequestAuthenticator(NoAuth(), None)
    settings.check_auth_mode()
    if tokens is None:
        found: list[Authenticator] = []
        if settings.tokens_file is not None:
            found.append(StaticTokens.from_file(settings.tokens_file))
        if settings.oidc_issuer:
            found.append(OidcAuthenticator.from_settings(settings))
        tokens = found[0] if len(found) == 1 else TokenChain(found) if found else None
    identities = ClientIdentities.from_settings(settings)
    if tokens is None and identities is None:
        raise ApiConfigError(
            "no API authentication configured: set tokens_file (static tokens), oidc_issuer"
            " (OIDC/JWT), client_identities (client certificates or a trusted proxy) or, to run"
            " without authentication, auth=none"
        )
    return RequestAuthenticator(tokens, identities)


_bearer_scheme = HTTPBearer(auto_error=False, description="A static token or an OIDC JWT.")


class RoleRequirement:
    """Route dependency declaring (and re-checking) what a route needs: a role or, with
    `token`, exactly that shared bearer token (component reconcilers' callbacks)."""

    def __init__(self, role: Role, token: str = "") -> None:
        self.role = role
        self.token = token
        self.shared = (
            SharedToken(token, refused="not a component reconciler token") if token else None
        )

    async def __call__(self, request: Request, _: Any = Depends(_bearer_scheme)) -> Principal:
        principal = getattr(request.state, PRINCIPAL, None)
        if not isinstance(principal, Principal):
            raise HTTPException(401, "missing bearer token", headers=CHALLENGE)
        if self.token and principal.subject != CALLBACK_SUBJECT:
            raise HTTPException(403, "not a component reconciler token")
        if principal.role < self.role:
            raise HTTPException(403, _forbidden(principal, self.role))
        return principal


def requires(role: Role) -> Any:
    """`dependencies=[requires(Role.ADMIN)]` on a route."""
    return Depends(RoleRequirement(role))


def requires_token(token: str) -> Any:
    """`dependencies=[requires_token(secret)]`: only callers presenting exactly `token`."""
    return Depends(RoleRequirement(Role.NONE, token))


def route_requirement(route: BaseRoute) -> RoleRequirement | None:
    """What a route declared with `requires`/`requires_token`, None for open routes."""
    if not isinstance(route, APIRoute):
        return None
    for dependency in route.dependant.dependencies:
        if isinstance(dependency.call, RoleRequirement):
            return dependency.call
    return None


def route_role(route: BaseRoute) -> Role | None:
    """The role a route declared with `requires`, None for open routes."""
    requirement = route_requirement(route)
    return requirement.role if requirement is not None else None


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
    """Authenticates and authorizes every request to a route that declares a requirement."""

    def __init__(
        self, app: ASGIApp, *, routes: Sequence[BaseRoute], auth: RequestAuthenticator
    ) -> None:
        self.app = app
        self.routes = routes
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        matched = match_route(self.routes, scope)
        requirement = route_requirement(matched.route) if matched else None
        if requirement is None:
            await self.app(scope, receive, send)
            return
        try:
            if requirement.shared is not None:
                requirement.shared.check(scope)
                principal = Principal(CALLBACK_SUBJECT, Role.NONE)
            else:
                principal = await self.auth.authenticate(scope)
        except AuthError as exc:
            await error_response(401, str(exc), headers=CHALLENGE)(scope, receive, send)
            return
        except BearerRefused as exc:
            await error_response(exc.status, str(exc), headers=exc.headers)(scope, receive, send)
            return
        except AuthUnavailable as exc:
            await error_response(503, str(exc))(scope, receive, send)
            return
        scope_state(scope)[PRINCIPAL] = principal
        if principal.role < requirement.role:
            await error_response(403, _forbidden(principal, requirement.role))(scope, receive, send)
            return
        await self.app(scope, receive, send)
