"""Authentication and authorization: every route that needs a role refuses missing, invalid and
insufficient tokens (401 with a Bearer challenge / 403), for static tokens and OIDC JWTs alike;
health, OpenAPI and docs stay open; nothing is changed by a refused request."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest

from reconciler.api import ApiConfigError, ApiSettings, create_app
from reconciler.api.auth import Role, route_roles
from reconciler.mothership.service import MothershipService
from tests.api.support import (
    Api,
    Issuer,
    Tokens,
    cluster_body,
    oidc_settings,
    quiet_audit,
    running_api,
    snapshot,
)

EXPECTED_ROLES = {
    ("POST", "/v1/clusters"): Role.ADMIN,
    ("PUT", "/v1/clusters"): Role.ADMIN,
    ("DELETE", "/v1/clusters/{runtimeID}"): Role.ADMIN,
    ("GET", "/v1/clusters/state"): Role.VIEWER,
    ("GET", "/v1/clusters/{runtimeID}/status"): Role.VIEWER,
    ("PUT", "/v1/clusters/{runtimeID}/status"): Role.OPERATOR,
    ("GET", "/v1/clusters/{runtimeID}/config/{configVersion}"): Role.VIEWER,
    ("GET", "/v1/clusters/{runtimeID}/config/{configVersion}/status"): Role.VIEWER,
    ("GET", "/v1/clusters/{runtimeID}/configs/{configVersion}/status"): Role.VIEWER,
    ("GET", "/v1/clusters/{runtimeID}/statusChanges"): Role.VIEWER,
    ("GET", "/v1/clusters/{runtimeID}/statusChanges/{offset}"): Role.VIEWER,
    ("GET", "/v1/reconciliations"): Role.VIEWER,
    ("GET", "/v1/reconciliations/{schedulingID}/info"): Role.VIEWER,
    ("PUT", "/v1/reconciliations/{schedulingID}/debug"): Role.OPERATOR,
    ("DELETE", "/v1/reconciliations/cluster/{runtimeID}"): Role.OPERATOR,  # as the original
    ("POST", "/v1/operations/{schedulingID}/{correlationID}/stop"): Role.OPERATOR,
    ("PUT", "/v1/operations/{schedulingID}/{correlationID}/debug"): Role.OPERATOR,
    ("GET", "/v1/clusters"): Role.VIEWER,
    # component reconcilers: the operator role when no callback token is configured
    ("POST", "/v1/operations/{schedulingID}/callback/{correlationID}"): Role.OPERATOR,
    ("GET", "/v1/clusters/{runtimeID}/configs"): Role.VIEWER,
    ("POST", "/v1/clusters/{runtimeID}/config/{configVersion}/restore"): Role.ADMIN,
    ("POST", "/v1/clusters/{runtimeID}/forget"): Role.ADMIN,
    ("GET", "/v1/clusters/{runtimeID}/health"): Role.VIEWER,
    # the admin console's data (its pages are open shells; its buttons call the routes above)
    ("GET", "/ui/whoami"): Role.VIEWER,
    ("GET", "/ui/fragments/me"): Role.VIEWER,
    ("GET", "/ui/fragments/fleet"): Role.VIEWER,
    ("GET", "/ui/fragments/kyma"): Role.VIEWER,
    **{
        ("GET", f"/ui/fragments/clusters/{{runtimeID}}/{part}"): Role.VIEWER
        for part in ("summary", "history", "reconciliations", "configs", "diff")
    },
}
PARAMS = {
    "runtimeID": "rt-auth",
    "configVersion": "1",
    "offset": "1h",
    "schedulingID": "s",
    "correlationID": "c",
}
BODIES: dict[str, Any] = {
    "/v1/clusters": cluster_body("rt-auth"),
    "/v1/clusters/{runtimeID}/status": {"status": "reconcile_disabled"},
    "/v1/operations/{schedulingID}/{correlationID}/stop": {"reason": "test"},
    "/v1/operations/{schedulingID}/callback/{correlationID}": {"status": "running"},
}


def _table() -> list[tuple[str, str, Role]]:
    service = cast(MothershipService, object())  # routes are built without touching it
    app = create_app(service, settings=ApiSettings(auth="none"), audit=quiet_audit())
    return [(r.method, r.path, r.role) for r in route_roles(app.routes)]


ROUTES = _table()


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    json: Any


def _request(method: str, template: str) -> Request:
    path = re.sub(r"\{(\w+)\}", lambda m: PARAMS[m.group(1)], template)
    return Request(method, path, BODIES.get(template) if method in ("POST", "PUT") else None)


def test_route_table_gives_every_v1_route_the_documented_role() -> None:
    assert {(m, p): r for m, p, r in ROUTES} == EXPECTED_ROLES


@pytest.fixture(params=["static", "oidc"])
async def secured(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Api, Any]]:
    """An API with static tokens or OIDC, and a function giving the headers of a role."""
    if request.param == "static":
        tokens = Tokens.write(tmp_path)
        settings = ApiSettings(tokens_file=tokens.path)
        header = tokens.header
    else:
        issuer = Issuer()
        settings = oidc_settings(issuer.write_jwks(tmp_path))
        header = issuer.header
    async with running_api(tmp_path, settings) as api:
        yield api, header


@pytest.mark.parametrize(
    ("method", "template", "role"), ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES]
)
async def test_route_refuses_missing_invalid_and_insufficient_tokens(
    secured: tuple[Api, Any], method: str, template: str, role: Role
) -> None:
    api, header = secured
    request = _request(method, template)
    before = await snapshot(api.engine)
    refusals: list[tuple[dict[str, str], int]] = [
        ({}, 401),
        ({"Authorization": "Bearer not-a-valid-token"}, 401),
        ({"Authorization": "Basic YWRtaW46YWRtaW4="}, 401),
    ]
    if role > Role.VIEWER:
        refusals.append((header(Role(role - 1)), 403))
    for headers, status in refusals:
        response = await api.client.request(
            method, request.path, json=request.json, headers=headers
        )
        assert response.status_code == status, (headers, response.text)
        assert isinstance(response.json()["error"], str)
        if status == 401:
            assert response.headers["WWW-Authenticate"] == "Bearer"
    assert await snapshot(api.engine) == before, "a refused request changed the database"
    allowed = await api.client.request(
        method, request.path, json=request.json, headers=header(role)
    )
    assert allowed.status_code not in (401, 403) or "only a new operation" in allowed.text, (
        allowed.text
    )


async def test_token_without_a_role_is_forbidden_everywhere(tmp_path: Path) -> None:
    issuer = Issuer()
    async with running_api(tmp_path, oidc_settings(issuer.write_jwks(tmp_path))) as api:
        response = await api.client.get("/v1/reconciliations", headers=issuer.header(None))
        assert response.status_code == 403
        assert "someone has role none" in response.json()["error"]


async def test_open_routes_need_no_token(tmp_path: Path, tokens: Tokens) -> None:
    async with running_api(tmp_path, ApiSettings(tokens_file=tokens.path)) as api:
        for path in ("/health/live", "/health/ready", "/openapi.json", "/docs"):
            response = await api.client.get(path)
            assert response.status_code == 200, (path, response.text)


async def test_metrics_need_the_viewer_role_by_default(tmp_path: Path, tokens: Tokens) -> None:
    async with running_api(tmp_path, ApiSettings(tokens_file=tokens.path)) as api:
        refused = await api.client.get("/metrics")
        assert refused.status_code == 401
        assert "reconciler_" not in refused.text
        allowed = await api.client.get("/metrics", headers=tokens.header(Role.VIEWER))
        assert allowed.status_code == 200
        assert "reconciler_cluster_status" in allowed.text


async def test_metrics_on_a_separate_listener_leave_the_api(tmp_path: Path, tokens: Tokens) -> None:
    settings = ApiSettings(tokens_file=tokens.path, metrics_port=9999)
    async with running_api(tmp_path, settings) as api:
        response = await api.client.get("/metrics", headers=tokens.header(Role.VIEWER))
        assert response.status_code == 404


async def test_audit_names_the_subject_or_none_for_refused_callers(
    tmp_path: Path, tokens: Tokens
) -> None:
    async with running_api(tmp_path, ApiSettings(tokens_file=tokens.path)) as api:
        await api.client.put("/v1/clusters/rt-x/status", json={"status": "ready"})
        await api.client.put(
            "/v1/clusters/rt-x/status", json={"status": "ready"}, headers=tokens.header(Role.VIEWER)
        )
        await api.client.put(
            "/v1/clusters/rt-x/status",
            json={"status": "ready"},
            headers=tokens.header(Role.OPERATOR),
        )
        lines = api.audit_lines()
    assert [(line["subject"], line["outcome"]) for line in lines] == [
        (None, 401),
        ("viewer-user", 403),
        ("operator-user", 404),
    ]
    assert {line["action"] for line in lines} == {"PUT /v1/clusters/{runtimeID}/status"}


def test_app_refuses_to_start_without_authentication(tmp_path: Path) -> None:
    service = cast(MothershipService, object())
    with pytest.raises(ApiConfigError, match="no API authentication configured"):
        create_app(service, settings=ApiSettings(), audit=quiet_audit())


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("tok: {subject: a, role: root}", "unknown role 'root'"),
        ("tok: {role: admin}", "needs a subject and a role"),
        ("[a, b]", "must map tokens"),
        ("{tok: [", "not valid YAML/JSON"),
    ],
)
def test_bad_token_file_is_refused_at_start(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "tokens.yaml"
    path.write_text(content)
    service = cast(MothershipService, object())
    with pytest.raises(ApiConfigError, match=re.escape(message)):
        create_app(service, settings=ApiSettings(tokens_file=path), audit=quiet_audit())


async def test_token_file_may_hold_digests_instead_of_tokens(tmp_path: Path) -> None:
    import hashlib

    digest = hashlib.sha256(b"plain-token").hexdigest()
    path = tmp_path / "tokens.yaml"
    path.write_text(f"'sha256:{digest}': {{subject: keb, role: admin}}\n")
    async with running_api(tmp_path, ApiSettings(tokens_file=path)) as api:
        ok = await api.client.get(
            "/v1/reconciliations", headers={"Authorization": "Bearer plain-token"}
        )
        assert ok.status_code == 200
        wrong = await api.client.get(
            "/v1/reconciliations", headers={"Authorization": f"Bearer {digest}"}
        )
        assert wrong.status_code == 401
