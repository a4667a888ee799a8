"""OIDC/JWT verification: signature against the JWKS, `exp`/`iss`/`aud`, asymmetric algorithms
only, roles from a claim or from groups, JWKS from a URL with refresh on key rotation."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from reconciler.api import ApiConfigError
from reconciler.api.auth import AuthError, AuthUnavailable, Principal, Role
from reconciler.api.oidc import OidcAuthenticator
from tests.api.support import AUDIENCE, ISSUER, Issuer, oidc_settings


@pytest.fixture
def issuer() -> Issuer:
    return Issuer()


@pytest.fixture
def auth(issuer: Issuer, tmp_path: Path) -> OidcAuthenticator:
    settings = oidc_settings(
        issuer.write_jwks(tmp_path), oidc_group_roles={"sre": "operator", "keb": "admin"}
    )
    return OidcAuthenticator.from_settings(settings)


async def test_valid_token_gives_subject_and_role(auth: OidcAuthenticator, issuer: Issuer) -> None:
    principal = await auth.authenticate(issuer.token(sub="keb-service", role="admin"))
    assert principal == Principal("keb-service", Role.ADMIN)


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        ({"role": ["viewer", "operator"]}, Role.OPERATOR),
        ({"groups": ["devs", "sre"]}, Role.OPERATOR),
        ({"groups": "keb", "role": "viewer"}, Role.ADMIN),
        ({"role": "superuser"}, Role.NONE),
        ({}, Role.NONE),
    ],
)
async def test_role_comes_from_the_role_claim_or_mapped_groups(
    auth: OidcAuthenticator, issuer: Issuer, claims: dict[str, Any], expected: Role
) -> None:
    assert (await auth.authenticate(issuer.token(**claims))).role is expected


def _hs256_with_public_key(issuer: Issuer) -> str:
    public_pem = issuer.key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "x", "exp": now + 60, "role": "admin"}
    header = {"alg": "HS256", "kid": issuer.kid, "typ": "JWT"}
    signing_input = (
        jwt.utils.base64url_encode(json.dumps(header).encode())
        + b"."
        + jwt.utils.base64url_encode(json.dumps(claims).encode())
    )
    import hashlib
    import hmac

    signature = hmac.new(public_pem, signing_input, hashlib.sha256).digest()
    return (signing_input + b"." + jwt.utils.base64url_encode(signature)).decode()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda i: i.token(expires_in=-3600, role="admin"), "expired"),
        (lambda i: i.token(aud="someone-else", role="admin"), "Audience"),
        (lambda i: i.token(iss="https://evil.test", role="admin"), "issuer"),
        (lambda i: Issuer(kid=i.kid).token(role="admin"), "Signature verification failed"),
        (lambda i: Issuer(kid="other").token(role="admin"), "unknown key"),
        (
            lambda i: jwt.encode({"sub": "x", "role": "admin"}, None, algorithm="none"),
            "algorithm none",
        ),
        (_hs256_with_public_key, "algorithm HS256 not accepted"),
        (lambda i: i.token(role="admin", sub=""), "no `sub` claim"),
        (lambda i: "not.a.jwt", "not a JWT"),
    ],
    ids=[
        "expired",
        "audience",
        "issuer",
        "forged",
        "unknown-kid",
        "alg-none",
        "hs256",
        "no-sub",
        "garbage",
    ],
)
async def test_bad_tokens_are_refused(
    auth: OidcAuthenticator, issuer: Issuer, make: Any, message: str
) -> None:
    with pytest.raises(AuthError, match=message):
        await auth.authenticate(make(issuer))


async def test_jwks_url_is_fetched_and_refetched_when_keys_rotate() -> None:
    old, new = Issuer(kid="old"), Issuer(kid="new")
    served = {"jwks": old.jwks(), "fetches": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        served["fetches"] += 1
        return httpx.Response(200, json=served["jwks"])

    auth = OidcAuthenticator(
        issuer=ISSUER,
        audience=AUDIENCE,
        algorithms=["RS256"],
        jwks_url="https://issuer.test/jwks",
        min_refresh=0,
        transport=httpx.MockTransport(handler),
    )
    assert (await auth.authenticate(old.token(role="viewer"))).role is Role.VIEWER
    await auth.authenticate(old.token(role="viewer"))
    assert served["fetches"] == 1  # cached
    served["jwks"] = new.jwks()
    assert (await auth.authenticate(new.token(role="admin"))).role is Role.ADMIN
    assert served["fetches"] == 2


async def test_unreachable_jwks_url_means_unavailable_not_unauthenticated() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("no route", request=request)

    auth = OidcAuthenticator(
        issuer=ISSUER,
        audience=AUDIENCE,
        algorithms=["RS256"],
        jwks_url="https://issuer.test/jwks",
        transport=httpx.MockTransport(handler),
    )
    with pytest.raises(AuthUnavailable, match="cannot fetch the JWKS"):
        await auth.authenticate(Issuer().token(role="admin"))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"oidc_algorithms": ["HS256"]}, "must be asymmetric"),
        ({"oidc_algorithms": ["none"]}, "must be asymmetric"),
        ({"oidc_jwks_url": "https://issuer.test/jwks"}, "exactly one of"),
        ({"oidc_audience": ""}, "needs oidc_issuer and oidc_audience"),
        ({"oidc_group_roles": {"sre": "god"}}, "unknown role 'god'"),
    ],
)
def test_unsafe_or_incomplete_oidc_settings_are_refused(
    tmp_path: Path, issuer: Issuer, overrides: dict[str, Any], message: str
) -> None:
    settings = oidc_settings(issuer.write_jwks(tmp_path), **overrides)
    with pytest.raises(ApiConfigError, match=message):
        OidcAuthenticator.from_settings(settings)
