"""Input validation on cluster upserts: size limit, malformed JSON, unknown components, the
kubeconfig (parsed, no host access, cluster contacted); each rejection is a 400/413 with an
`{"error": ...}` body and leaves the database exactly as it was."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from reconciler.api import ApiSettings
from reconciler.api.auth import Role
from reconciler.errors import ReconcilerError
from reconciler.model.cluster import ClusterSpec
from tests.api.support import (
    Api,
    Tokens,
    cluster_body,
    running_api,
    secret_kubeconfig,
    snapshot,
)
from tests.conftest import KubeTarget


async def _rejected(api: Api, status: int, fragment: str, **request: object) -> str:
    before = await snapshot(api.engine)
    response = await api.client.request("POST", "/v1/clusters", **request)  # type: ignore[arg-type]
    assert response.status_code == status, response.text
    message = response.json()["error"]
    assert fragment in message, message
    assert await snapshot(api.engine) == before, "a rejected request changed the database"
    return str(message)


@pytest.fixture
async def checked(tmp_path: Path, tokens: Tokens) -> AsyncIterator[Api]:
    """An API whose kubeconfig check is the real one (contacts the cluster), 1 s timeout."""
    settings = ApiSettings(tokens_file=tokens.path, kubeconfig_timeout=1.0)
    async with running_api(
        tmp_path, settings, check_kubeconfig=None, headers=tokens.header(Role.ADMIN)
    ) as running:
        yield running


async def test_body_over_100kb_is_refused_by_its_declared_length(api: Api) -> None:
    body = cluster_body("rt-big")
    body["runtimeInput"]["description"] = "x" * 110_000
    await _rejected(api, 413, "exceeds 102400 bytes", json=body)


async def test_chunked_body_over_the_limit_is_refused_while_reading(api: Api) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(30):
            yield b" " * 4096  # JSON whitespace: valid until it is too much

    await _rejected(
        api, 413, "exceeds", content=chunks(), headers={"Content-Type": "application/json"}
    )


async def test_malformed_json_is_a_400_naming_the_problem(api: Api) -> None:
    await _rejected(api, 400, "malformed JSON", content=b'{"runtimeID": ', headers={})


async def test_missing_fields_are_named(api: Api) -> None:
    message = await _rejected(api, 400, "kymaConfig: Field required", json={"runtimeID": "rt"})
    assert "kubeconfig: Field required" in message


async def test_deeply_nested_json_is_a_400_not_a_crash(api: Api) -> None:
    await _rejected(api, 400, "", content=b"[" * 50_000 + b"]" * 50_000)


async def test_a_900_deep_configuration_value_is_a_400_before_the_kubeconfig_is_contacted(
    tmp_path: Path, tokens: Tokens
) -> None:
    contacted: list[str] = []

    async def record_contact(kubeconfig: str) -> None:
        contacted.append(kubeconfig)

    value: object = "leaf"
    for _ in range(900):
        value = {"nested": value}
    body = cluster_body("rt-deep")
    body["kymaConfig"]["components"][0]["configuration"].append({"key": "deep", "value": value})
    settings = ApiSettings(tokens_file=tokens.path)
    async with running_api(
        tmp_path, settings, check_kubeconfig=record_contact, headers=tokens.header(Role.ADMIN)
    ) as api:
        message = await _rejected(api, 400, "nested more than 64 levels deep", json=body)
        assert "configuration[2].value" in message
        shallow = cluster_body("rt-shallow")
        shallow["kymaConfig"]["components"][0]["configuration"].append(
            {"key": "deep", "value": json.loads('{"a":' * 64 + "1" + "}" * 64)}
        )
        assert (await api.client.post("/v1/clusters", json=shallow)).status_code == 200
    assert len(contacted) == 1  # only the accepted request reached the network check


async def test_a_refused_kubeconfig_is_never_contacted(tmp_path: Path, tokens: Tokens) -> None:
    contacted: list[str] = []

    async def record_contact(kubeconfig: str) -> None:
        contacted.append(kubeconfig)

    config = yaml.safe_load(secret_kubeconfig())
    config["users"][0]["user"] = {"exec": {"command": "/bin/sh"}}
    settings = ApiSettings(tokens_file=tokens.path)
    async with running_api(
        tmp_path, settings, check_kubeconfig=record_contact, headers=tokens.header(Role.ADMIN)
    ) as api:
        body = cluster_body("rt-exec", kubeconfig=yaml.safe_dump(config))
        await _rejected(api, 400, "uses `exec`", json=body)
    assert contacted == []


async def test_unknown_component_is_refused_by_the_validator(
    tmp_path: Path, tokens: Tokens
) -> None:
    async def known_only(spec: ClusterSpec) -> None:
        unknown = [c.component for c in spec.kyma_config.components if c.component != "istio"]
        if unknown:
            raise ReconcilerError(f"unknown component(s): {', '.join(unknown)}")

    settings = ApiSettings(tokens_file=tokens.path)
    async with running_api(
        tmp_path, settings, validate_spec=known_only, headers=tokens.header(Role.ADMIN)
    ) as api:
        body = cluster_body("rt-unknown", components=("istio", "flux-capacitor"))
        await _rejected(api, 400, "unknown component(s): flux-capacitor", json=body)
        accepted = await api.client.post(
            "/v1/clusters", json=cluster_body("rt-ok", components=("istio",))
        )
        assert accepted.status_code == 200, accepted.text


async def test_unreachable_cluster_is_refused_with_the_reason(checked: Api) -> None:
    body = cluster_body("rt-unreachable", kubeconfig=secret_kubeconfig("https://127.0.0.1:1"))
    await _rejected(checked, 400, "kubeconfig not accepted: cannot reach the apiserver", json=body)


async def test_silent_apiserver_is_refused_after_the_timeout(checked: Api) -> None:
    async def never_answer(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.Event().wait()

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        body = cluster_body("rt-silent", kubeconfig=secret_kubeconfig(f"http://127.0.0.1:{port}"))
        await _rejected(checked, 400, "kubeconfig not accepted", json=body)
    finally:
        server.close()


@pytest.mark.parametrize(
    ("kubeconfig", "fragment"),
    [
        ("not: [valid", "not valid YAML"),
        ("/root/.kube/config", "not a YAML mapping"),
        ("apiVersion: v1\nkind: Config\n", "kubeconfig is malformed"),
    ],
    ids=["not-yaml", "a-file-path", "no-context"],
)
async def test_malformed_kubeconfig_is_refused(
    checked: Api, kubeconfig: str, fragment: str
) -> None:
    await _rejected(checked, 400, fragment, json=cluster_body("rt-bad", kubeconfig=kubeconfig))


@pytest.mark.parametrize(
    ("user", "key"),
    [
        ({"exec": {"command": "/bin/sh", "args": ["-c", "id"]}}, "exec"),
        ({"tokenFile": "/var/run/secrets/token"}, "tokenFile"),
        (
            {"client-certificate": "/etc/cert.pem", "client-key": "/etc/key.pem"},
            "client-certificate",
        ),
        ({"auth-provider": {"name": "oidc"}}, "auth-provider"),
    ],
    ids=["exec", "token-file", "cert-files", "auth-provider"],
)
async def test_kubeconfig_acting_on_the_mothership_host_is_refused(
    checked: Api, user: dict[str, object], key: str
) -> None:
    config = yaml.safe_load(secret_kubeconfig())
    config["users"][0]["user"] = user
    body = cluster_body("rt-host", kubeconfig=yaml.safe_dump(config))
    await _rejected(checked, 400, f"uses `{key}`", json=body)


async def test_reachable_kubeconfig_is_accepted_in_any_key_spelling(
    checked: Api, kube_cluster: KubeTarget
) -> None:
    text = kube_cluster.kubeconfig.read_text()
    as_json = json.dumps(yaml.safe_load(text))  # one line: must not be taken for a file path
    for key, kubeconfig in (("kubeConfig", text), ("KUBECONFIG", as_json)):
        response = await checked.client.post(
            "/v1/clusters",
            json=cluster_body("rt-reachable", kubeconfig=kubeconfig, kubeconfig_key=key),
        )
        assert response.status_code == 200, response.text


async def test_body_without_content_type_is_parsed_as_json(api: Api) -> None:
    raw = json.dumps(cluster_body("rt-no-type")).encode()
    response = await api.client.post("/v1/clusters", content=raw, headers={"Content-Type": ""})
    assert response.status_code == 200, response.text


async def test_wrong_method_answers_405_naming_every_method_of_that_path(api: Api) -> None:
    for method, path, allowed in (
        ("PATCH", "/v1/clusters", "GET, POST, PUT"),
        ("DELETE", "/v1/clusters/rt-x/status", "GET, PUT"),
        ("POST", "/v1/reconciliations", "GET"),
    ):
        response = await api.client.request(method, path)
        assert response.status_code == 405, (method, path)
        assert response.headers["Allow"] == allowed
        assert response.json() == {"error": "Method Not Allowed"}


@pytest.mark.parametrize("value", ["0.5", "1700000000", "yesterday", "2026-13-01T00:00:00Z"])
async def test_reconciliation_time_filters_must_be_rfc3339(api: Api, value: str) -> None:
    for name in ("before", "after"):
        response = await api.client.get("/v1/reconciliations", params={name: value})
        assert response.status_code == 400, response.text
        assert response.json()["error"] == f"{name}: not an RFC 3339 date-time"


async def test_reconciliation_time_filters_accept_rfc3339_with_or_without_zone(api: Api) -> None:
    for value in ("2026-11-24T10:00:00Z", "2026-11-24T10:00:00+01:00", "2026-11-24T10:00:00"):
        response = await api.client.get("/v1/reconciliations", params={"before": value})
        assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", "/v1/reconciliations/cluster/null,null"),
        ("GET", "/v1/clusters/a,b/status"),
        ("DELETE", "/v1/clusters/-leading-dash"),
    ],
)
async def test_path_runtime_id_that_no_cluster_can_have_is_a_400(
    api: Api, method: str, path: str
) -> None:
    before = await snapshot(api.engine)
    response = await api.client.request(method, path)
    assert response.status_code == 400, response.text
    assert response.json()["error"].startswith("runtimeID: ")
    assert await snapshot(api.engine) == before
