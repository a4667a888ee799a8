"""Client identities: mutual TLS served by the mothership (a certificate's CN or URI SAN mapped
to a role), an identity header believed only from a trusted proxy, and bearer tokens (static
and OIDC) working beside them. Authentication stays refused when nothing is configured."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import cast

import httpx
import pytest
from fastapi import FastAPI

from reconciler.api import ApiConfigError, ApiSettings, create_app
from reconciler.api.auth import Role
from reconciler.api.identity import header_names
from reconciler.api.server import server_config
from reconciler.mothership.service import MothershipService
from tests.api.pki import TestCa
from tests.api.serving import served_api
from tests.api.support import (
    AUDIENCE,
    ISSUER,
    Issuer,
    Tokens,
    cluster_body,
    quiet_audit,
    running_api,
)

KEB_SPIFFE = "spiffe://cluster.local/ns/kcp-system/sa/kcp-kyma-environment-broker"


@pytest.fixture
def ca(tmp_path: Path) -> TestCa:
    return TestCa(tmp_path / "pki")


def mtls_settings(ca: TestCa, **overrides: object) -> ApiSettings:
    base: dict[str, object] = {
        "client_ca_file": ca.file,
        "client_identities": {KEB_SPIFFE: "admin", "dashboard": "viewer"},
    }
    return ApiSettings(**{**base, **overrides})  # type: ignore[arg-type]


async def test_client_certificate_is_authenticated_by_uri_san_or_cn(
    tmp_path: Path, ca: TestCa
) -> None:
    keb = ca.client("keb", KEB_SPIFFE)
    dashboard = ca.client("dashboard")
    stranger = ca.client("stranger")
    async with served_api(tmp_path, ca, mtls_settings(ca)) as served:
        async with served.client(keb) as client:
            created = await client.post("/v1/clusters", json=cluster_body("rt-mtls"))
            assert created.status_code == 200, created.text
        async with served.client(dashboard) as client:
            assert (await client.get("/v1/clusters/rt-mtls/status")).status_code == 200
            refused = await client.delete("/v1/clusters/rt-mtls")
            assert refused.status_code == 403
            assert refused.json()["error"] == "dashboard has role viewer; this needs admin"
        async with served.client(stranger) as client:
            unknown = await client.get("/v1/clusters/rt-mtls/status")
            assert unknown.status_code == 401
            assert "'stranger' is not mapped to a role" in unknown.json()["error"]
        async with served.client() as client:
            anonymous = await client.get("/v1/clusters/rt-mtls/status")
            assert anonymous.status_code == 401
            assert (await client.get("/health/live")).status_code == 200


async def test_certificate_of_another_ca_is_refused_in_the_handshake(
    tmp_path: Path, ca: TestCa
) -> None:
    foreign = TestCa(tmp_path / "other", name="other-ca").client("keb", KEB_SPIFFE)
    async with served_api(tmp_path, ca, mtls_settings(ca)) as served, served.client(foreign) as c:
        with pytest.raises((httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError)):
            await c.get("/v1/reconciliations")


async def test_required_client_certificate_refuses_a_connection_without_one(
    tmp_path: Path, ca: TestCa
) -> None:
    settings = mtls_settings(ca, client_cert_required=True)
    async with served_api(tmp_path, ca, settings) as served:
        async with served.client(ca.client("dashboard")) as client:
            assert (await client.get("/v1/reconciliations")).status_code == 200
        async with served.client() as client:
            with pytest.raises((httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError)):
                await client.get("/v1/reconciliations")


async def test_tokens_oidc_and_client_certificates_work_together(
    tmp_path: Path, ca: TestCa
) -> None:
    tokens = Tokens.write(tmp_path)
    issuer = Issuer()
    settings = mtls_settings(
        ca,
        tokens_file=tokens.path,
        oidc_issuer=ISSUER,
        oidc_audience=AUDIENCE,
        oidc_jwks_file=issuer.write_jwks(tmp_path),
    )
    async with served_api(tmp_path, ca, settings) as served:
        async with served.client(ca.client("dashboard")) as client:
            by_cert = await client.get("/v1/reconciliations")
            by_token = await client.put(  # a bearer token is judged by the token
                "/v1/clusters/rt-none/status",
                json={"status": "ready"},
                headers=tokens.header(Role.OPERATOR),
            )
        async with served.client() as client:
            by_jwt = await client.get("/v1/reconciliations", headers=issuer.header(Role.VIEWER))
            bad_jwt = await client.get(
                "/v1/reconciliations", headers=issuer.header(Role.VIEWER, exp=1)
            )
            bad_token = await client.get(
                "/v1/reconciliations", headers={"Authorization": "Bearer nope"}
            )
    assert by_cert.status_code == 200, by_cert.text
    assert by_token.status_code == 404, by_token.text  # authorized; the cluster is unknown
    assert by_jwt.status_code == 200, by_jwt.text
    assert (bad_jwt.status_code, bad_jwt.json()["error"]) == (401, "invalid bearer token: expired")
    assert (bad_token.status_code, bad_token.json()["error"]) == (401, "invalid bearer token")


XFCC = (
    'By=spiffe://cluster.local/ns/kcp-system/sa/reconciler;Hash=abc;Subject="CN=keb,O=SAP";'
    f"URI={KEB_SPIFFE}"
)


@pytest.mark.parametrize(("trusted", "status"), [(["127.0.0.1/32"], 200), (["10.0.0.0/8"], 401)])
async def test_identity_header_is_believed_only_from_a_trusted_proxy(
    tmp_path: Path, trusted: list[str], status: int
) -> None:
    settings = ApiSettings(client_identities={KEB_SPIFFE: "admin"}, trusted_proxies=trusted)
    async with running_api(tmp_path, settings) as api:  # the ASGI client's peer is 127.0.0.1
        response = await api.client.post(
            "/v1/clusters",
            json=cluster_body("rt-proxy"),
            headers={"X-Forwarded-Client-Cert": XFCC},
        )
        assert response.status_code == status, response.text


def test_identity_header_names_come_from_the_nearest_proxys_element() -> None:
    forwarded = f'By=a;URI=spiffe://far/away,By=b;Subject="CN=near,O=x";URI={KEB_SPIFFE};DNS=d'
    assert header_names(forwarded) == ["near", KEB_SPIFFE, "d"]
    assert header_names("keb") == ["keb"]
    assert header_names("  ") == []


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (ApiSettings(), "no API authentication configured"),
        (ApiSettings(client_identities={"keb": "admin"}), "need client_ca_file"),
        (ApiSettings(trusted_proxies=["127.0.0.1"]), "need client_identities"),
        (
            ApiSettings(client_identities={"keb": "root"}, trusted_proxies=["127.0.0.1"]),
            "unknown role 'root'",
        ),
        (
            ApiSettings(client_identities={"keb": "admin"}, trusted_proxies=["not-an-address"]),
            "does not appear to be an IPv4 or IPv6 network",
        ),
        (ApiSettings(auth="static"), "auth=static needs tokens_file"),
    ],
)
def test_authentication_that_cannot_work_is_refused_at_start(
    settings: ApiSettings, message: str
) -> None:
    service = cast(MothershipService, object())
    with pytest.raises(ApiConfigError, match=message):
        create_app(service, settings=settings, audit=quiet_audit())


def test_mutual_tls_without_a_server_certificate_is_refused(ca: TestCa) -> None:
    with pytest.raises(ApiConfigError, match="needs a TLS certificate"):
        server_config(FastAPI(), mtls_settings(ca), host="127.0.0.1", port=1)


def test_server_asks_for_an_optional_client_certificate_by_default(ca: TestCa) -> None:
    pair = ca.server()
    config = server_config(
        FastAPI(),
        mtls_settings(ca),
        host="127.0.0.1",
        port=1,
        cert_file=pair.cert,
        key_file=pair.key,
    )
    assert config.ssl_cert_reqs == ssl.CERT_OPTIONAL
    assert config.ssl_ca_certs == str(ca.file)
