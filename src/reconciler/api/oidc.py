"""OIDC/JWT bearer tokens: signature (JWKS from a file or URL), `exp`, `iss` and `aud` verified;
the role comes from a claim (default `role`) or from group membership (`groups` -> role map).

Only asymmetric algorithms are accepted (the JWKS holds public keys; `none` and HMAC would let a
caller forge tokens). A JWKS URL is fetched with a timeout, cached for `oidc_jwks_refresh`
seconds and re-fetched early, at most every `oidc_jwks_min_refresh` seconds, when a token names
an unknown key id (key rotation). Discovery documents are not read: configure the JWKS directly.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt

from reconciler.api.principal import AuthError, AuthUnavailable, Principal, Role
from reconciler.api.settings import ApiConfigError, ApiSettings

ASYMMETRIC = {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}
ASYMMETRIC |= {"EdDSA"}


@dataclass(frozen=True)
class _Key:
    jwk: jwt.PyJWK
    algorithm: str
    """The `alg` the JWKS pins for this key ('' when it leaves it open)."""


def _key_set(data: Any, source: str) -> dict[str, _Key]:
    """Signing keys by key id ('' for a key without one) from a JWKS document."""
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
        raise ValueError(f"JWKS from {source} has no `keys` list")
    keys: dict[str, _Key] = {}
    for raw in data["keys"]:
        if not isinstance(raw, dict) or raw.get("use", "sig") != "sig":
            continue
        try:
            key = jwt.PyJWK(raw)
        except jwt.PyJWTError:
            continue  # a key type we cannot use; others may do
        keys[str(raw.get("kid", ""))] = _Key(key, str(raw.get("alg", "")))
    if not keys:
        raise ValueError(f"JWKS from {source} holds no usable signing key")
    return keys


def _names(value: Any) -> list[str]:
    """A claim that may be one string or a list of strings, as a list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, str)]
    return []


class OidcAuthenticator:
    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        algorithms: list[str],
        keys: dict[str, _Key] | None = None,
        jwks_url: str = "",
        role_claim: str = "role",
        groups_claim: str = "groups",
        group_roles: dict[str, Role] | None = None,
        subject_claim: str = "sub",
        leeway: float = 30.0,
        refresh: float = 300.0,
        min_refresh: float = 30.0,
        http_timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.issuer = issuer
        self.audience = audience
        self.algorithms = algorithms
        self.jwks_url = jwks_url
        self.role_claim = role_claim
        self.groups_claim = groups_claim
        self.group_roles = group_roles or {}
        self.subject_claim = subject_claim
        self.leeway = leeway
        self.refresh = refresh
        self.min_refresh = min_refresh
        self.http_timeout = http_timeout
        self.transport = transport
        self._keys = keys or {}
        self._fetched = -float("inf")
        self._lock = asyncio.Lock()

    @classmethod
    def from_settings(
        cls, settings: ApiSettings, *, transport: httpx.AsyncBaseTransport | None = None
    ) -> OidcAuthenticator:
        if not settings.oidc_issuer or not settings.oidc_audience:
            raise ApiConfigError("auth=oidc needs oidc_issuer and oidc_audience")
        if (settings.oidc_jwks_file is None) == (not settings.oidc_jwks_url):
            raise ApiConfigError("auth=oidc needs exactly one of oidc_jwks_file, oidc_jwks_url")
        unsafe = [a for a in settings.oidc_algorithms if a not in ASYMMETRIC]
        if unsafe or not settings.oidc_algorithms:
            raise ApiConfigError(
                f"oidc_algorithms must be asymmetric ({', '.join(sorted(ASYMMETRIC))});"
                f" refused: {', '.join(unsafe) or 'empty list'}"
            )
        try:
            group_roles = {g: Role.parse(r) for g, r in settings.oidc_group_roles.items()}
        except ValueError as exc:
            raise ApiConfigError(f"oidc_group_roles: {exc}") from None
        keys = None
        if settings.oidc_jwks_file is not None:
            keys = cls._read_file(settings.oidc_jwks_file)
        return cls(
            issuer=settings.oidc_issuer,
            audience=settings.oidc_audience,
            algorithms=list(settings.oidc_algorithms),
            keys=keys,
            jwks_url=settings.oidc_jwks_url,
            role_claim=settings.oidc_role_claim,
            groups_claim=settings.oidc_groups_claim,
            group_roles=group_roles,
            subject_claim=settings.oidc_subject_claim,
            leeway=settings.oidc_leeway,
            refresh=settings.oidc_jwks_refresh,
            min_refresh=settings.oidc_jwks_min_refresh,
            http_timeout=settings.oidc_http_timeout,
            transport=transport,
        )

    @staticmethod
    def _read_file(path: Path) -> dict[str, _Key]:
        try:
            return _key_set(json.loads(path.read_text()), str(path))
        except OSError as exc:
            raise ApiConfigError(f"JWKS file {path}: {exc.strerror or exc}") from None
        except (json.JSONDecodeError, ValueError) as exc:
            raise ApiConfigError(f"JWKS file {path}: {exc}") from None

    async def _fetch(self) -> None:
        try:
            async with httpx.AsyncClient(
                timeout=self.http_timeout, transport=self.transport
            ) as client:
                response = await client.get(self.jwks_url)
                response.raise_for_status()
                self._keys = _key_set(response.json(), self.jwks_url)
        except (httpx.HTTPError, ValueError) as exc:
            if not self._keys:
                raise AuthUnavailable(
                    f"cannot fetch the JWKS from {self.jwks_url}: {exc}"
                ) from None
        self._fetched = time.monotonic()

    async def _key(self, kid: str) -> _Key:
        if self.jwks_url:
            async with self._lock:
                age = time.monotonic() - self._fetched
                if age > self.refresh or (kid not in self._keys and age > self.min_refresh):
                    await self._fetch()
        key = self._keys.get(kid)
        if key is None and not kid and len(self._keys) == 1:
            key = next(iter(self._keys.values()))
        if key is None:
            raise AuthError("token signed with an unknown key")
        return key

    async def authenticate(self, token: str | None) -> Principal:
        if not token:
            raise AuthError("missing bearer token")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise AuthError("invalid bearer token: not a JWT") from None
        algorithm = str(header.get("alg", ""))
        if algorithm not in self.algorithms:
            raise AuthError(f"invalid bearer token: algorithm {algorithm or 'none'} not accepted")
        key = await self._key(str(header.get("kid", "")))
        if key.algorithm and key.algorithm != algorithm:
            raise AuthError("invalid bearer token: algorithm does not match the key")
        try:
            claims = jwt.decode(
                token,
                key.jwk.key,
                algorithms=[algorithm],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise AuthError("invalid bearer token: expired") from None
        except jwt.PyJWTError as exc:
            raise AuthError(f"invalid bearer token: {exc}") from None
        subject = claims.get(self.subject_claim)
        if not isinstance(subject, str) or not subject:
            raise AuthError(f"invalid bearer token: no `{self.subject_claim}` claim")
        return Principal(subject, self._role(claims))

    def _role(self, claims: dict[str, Any]) -> Role:
        """The highest role granted by the role claim or by a mapped group."""
        granted = [Role.NONE]
        for name in _names(claims.get(self.role_claim)):
            if name.upper() in Role.__members__:
                granted.append(Role[name.upper()])
        for group in _names(claims.get(self.groups_claim)):
            if group in self.group_roles:
                granted.append(self.group_roles[group])
        return max(granted)
