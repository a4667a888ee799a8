"""The console over a real engine (SQLite), through the app's own ASGI interface: open shells,
data only behind the viewer role, buttons by role, ETags, redacted diffs, no secret anywhere."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import httpx

from reconciler.api import ApiSettings
from reconciler.api.auth import Role
from reconciler.api.console.rendering import render
from reconciler.model.operation import Operation, Reconciliation
from reconciler.model.status import ClusterStatus, OperationState, OperationType
from tests.api.support import (
    SECRET_TOKEN,
    Api,
    Tokens,
    cluster_body,
    running_api,
    secret_kubeconfig,
)

SECRET_VALUE = "hunter2-secret-value"  # a `secret: true` configuration value of cluster_body


async def two_versions(api: Api, runtime_id: str = "rt-1") -> tuple[int, int]:
    first = await api.client.post(
        "/v1/clusters", json=cluster_body(runtime_id, kubeconfig=secret_kubeconfig())
    )
    body = cluster_body(runtime_id, kubeconfig=secret_kubeconfig())
    body["kymaConfig"]["version"] = "2.5.0"
    body["kymaConfig"]["components"][0]["configuration"][0]["value"] = 2  # replicas
    body["kymaConfig"]["components"][0]["configuration"][1]["value"] = "other-secret-value"
    second = await api.client.post("/v1/clusters", json=body)
    assert first.status_code == second.status_code == 200
    return first.json()["configurationVersion"], second.json()["configurationVersion"]


def as_role(api: Api, tokens: Tokens, role: Role | None) -> httpx.AsyncClient:
    headers = tokens.header(role) if role is not None else {}
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(api.app), base_url="http://mothership.test", headers=headers
    )


async def test_pages_are_open_shells_and_every_fragment_needs_a_viewer(
    api: Api, tokens: Tokens
) -> None:
    await two_versions(api)
    async with as_role(api, tokens, None) as anonymous:
        for path in ("/ui/", "/ui/clusters/rt-1", "/ui/signin", "/ui/kyma"):
            shell = await anonymous.get(path)
            assert shell.status_code == 200
            assert "rt-1" not in shell.text or path == "/ui/clusters/rt-1"
            assert "2.5.0" not in shell.text
            assert "script-src 'self'" in shell.headers["content-security-policy"]
        for path in (
            "/ui/fragments/fleet",
            "/ui/fragments/clusters/rt-1/summary",
            "/ui/fragments/clusters/rt-1/configs",
            "/ui/fragments/kyma",
            "/ui/whoami",
        ):
            assert (await anonymous.get(path)).status_code == 401, path


async def test_fleet_fragment_lists_counts_and_answers_304_while_nothing_changed(
    api: Api,
) -> None:
    await two_versions(api, "rt-1")
    await two_versions(api, "rt-2")
    await api.client.put("/v1/clusters/rt-2/status", json={"status": "reconcile_disabled"})

    first = await api.client.get("/ui/fragments/fleet", params={"status": "reconcile_disabled"})
    again = await api.client.get(
        "/ui/fragments/fleet",
        params={"status": "reconcile_disabled"},
        headers={"If-None-Match": first.headers["etag"]},
    )

    assert first.status_code == 200
    assert 'href="/ui/clusters/rt-2"' in first.text
    assert 'href="/ui/clusters/rt-1"' not in first.text
    assert 'data-count="reconcile_disabled">1<' in first.text
    assert first.headers["cache-control"] == "no-store"
    assert again.status_code == 304
    assert again.content == b""


async def test_a_bad_fleet_query_is_refused_with_the_reason(api: Api) -> None:
    answer = await api.client.get("/ui/fragments/fleet", params={"sort": "kubeconfig"})
    assert answer.status_code == 400
    assert "sort must be one of" in answer.json()["error"]


async def test_buttons_follow_the_role_and_the_api_refuses_a_viewer_anyway(
    api: Api, tokens: Tokens
) -> None:
    await two_versions(api)
    seen: dict[Role, str] = {}
    for role in (Role.VIEWER, Role.OPERATOR, Role.ADMIN):
        async with as_role(api, tokens, role) as client:
            summary = await client.get("/ui/fragments/clusters/rt-1/summary")
            configs = await client.get("/ui/fragments/clusters/rt-1/configs")
            seen[role] = summary.text + configs.text
    async with as_role(api, tokens, Role.VIEWER) as viewer:
        refused = await viewer.put("/v1/clusters/rt-1/status", json={"status": "ready"})

    assert "data-action" not in seen[Role.VIEWER]
    assert 'data-status="reconcile_disabled"' in seen[Role.OPERATOR]
    assert 'data-action="restore"' not in seen[Role.OPERATOR]
    assert 'data-action="restore"' in seen[Role.ADMIN]
    assert refused.status_code == 403


async def test_diff_shows_changes_side_by_side_with_secret_values_redacted(api: Api) -> None:
    old, new = await two_versions(api)

    diff = await api.client.get("/ui/fragments/clusters/rt-1/diff", params={"a": old, "b": new})

    assert diff.status_code == 200
    assert 'class="d-changed"' in diff.text
    assert "unchanged lines" in diff.text  # long unchanged runs are folded
    assert "2.4.0" in diff.text
    assert "2.5.0" in diff.text
    assert "&lt;redacted&gt;" in diff.text
    assert SECRET_VALUE not in diff.text
    assert "other-secret-value" not in diff.text


async def test_no_fragment_shows_a_secret_value_or_the_kubeconfig(api: Api) -> None:
    old, new = await two_versions(api)
    texts = []
    for path in (
        "/ui/fragments/fleet",
        "/ui/fragments/clusters/rt-1/summary",
        "/ui/fragments/clusters/rt-1/history",
        "/ui/fragments/clusters/rt-1/reconciliations",
        "/ui/fragments/clusters/rt-1/configs",
        f"/ui/fragments/clusters/rt-1/diff?a={old}&b={new}",
    ):
        answer = await api.client.get(path)
        assert answer.status_code == 200, path
        texts.append(answer.text)
    everything = "\n".join(texts)
    assert "rt-1" in everything
    for secret in (SECRET_VALUE, "other-secret-value", SECRET_TOKEN, "127.0.0.1:1"):
        assert secret not in everything


async def test_kyma_view_says_when_no_cluster_is_configured(api: Api) -> None:
    answer = await api.client.get("/ui/fragments/kyma")
    assert answer.status_code == 200
    assert "RECONCILER_API_CONSOLE_KUBECONFIG" in answer.text


async def test_console_can_be_switched_off(tmp_path: Path, tokens: Tokens) -> None:
    settings = ApiSettings(tokens_file=tokens.path, console=False)
    async with running_api(tmp_path, settings, headers=tokens.header(Role.ADMIN)) as api:
        assert (await api.client.get("/ui/")).status_code == 404
        assert (await api.client.get("/ui/static/htmx.min.js")).status_code == 404


def test_an_operation_that_never_started_shows_no_growing_duration() -> None:
    created = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def op(component: str, state: OperationState) -> Operation:
        return Operation(
            "sched", f"corr-{component}", "rt", 1, 1, component, "ns", OperationType.RECONCILE,
            state, "", 0, False, "", created, created + dt.timedelta(seconds=4),
        )  # fmt: skip

    def run(active: bool) -> Reconciliation:
        status = ClusterStatus.RECONCILING if active else ClusterStatus.ERROR
        return Reconciliation(
            "sched", "rt", 1, 1, OperationType.RECONCILE, status, active, created, created
        )

    operations = [op("done", OperationState.DONE), op("after", OperationState.NEW)]
    a_day_later = created + dt.timedelta(days=1)
    ended = render("reconciliations.html", runs=[(run(False), operations)], now=a_day_later)
    running = render("reconciliations.html", runs=[(run(True), operations)], now=a_day_later)

    assert "not run" in ended
    assert "waiting" in running
    assert "24h 0m" not in ended + running  # a day since it was created, never started
    assert "<td>4s</td>" in ended  # the finished one's duration
