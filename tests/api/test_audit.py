"""The audit log: one JSON line per state-changing request (subject, action as route template,
runtime, outcome, scheduling/correlation ids), none for reads, rotation by size and age,
redaction, and refusals aggregated per source so nobody can flush the trail unauthenticated."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import httpx
import pytest

from reconciler.api.auth import Role
from reconciler.observability.audit import AuditEntry, AuditLog, DeniedAggregator, redact
from tests.api.support import Api, Tokens, cluster_body


async def test_each_state_changing_request_is_one_line_and_reads_are_none(
    api: Api, tokens: Tokens
) -> None:
    await api.client.post("/v1/clusters", json=cluster_body("rt-audit"))
    await api.client.get("/v1/clusters/rt-audit/status")
    await api.client.put("/v1/clusters/rt-audit/status", json={"status": "reconcile_disabled"})
    await api.client.post("/v1/operations/sched-1/corr-1/stop", json={"reason": "r"})
    await api.client.delete("/v1/clusters/rt-audit")
    await api.client.post(
        "/v1/clusters", content=b"{", headers={"Content-Type": "application/json"}
    )
    lines = api.audit_lines()
    assert [(line["action"], line["runtime_id"], line["outcome"]) for line in lines] == [
        ("POST /v1/clusters", "rt-audit", 200),
        ("PUT /v1/clusters/{runtimeID}/status", "rt-audit", 201),
        ("POST /v1/operations/{schedulingID}/{correlationID}/stop", None, 404),
        ("DELETE /v1/clusters/{runtimeID}", "rt-audit", 200),
        ("POST /v1/clusters", None, 400),
    ]
    assert {line["subject"] for line in lines} == {"admin-user"}
    stop = lines[2]
    assert (stop["scheduling_id"], stop["correlation_id"]) == ("sched-1", "corr-1")
    fields = {"subject", "action", "runtime_id", "outcome", "scheduling_id", "correlation_id"}
    schema = {"timestamp", "level", "event", "audit"}  # every log line's, marked by `audit`
    assert all(schema <= set(line) <= schema | fields for line in lines)
    assert all(line["audit"] is True and line["event"] == "audit" for line in lines)


def test_file_is_rotated_by_size(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    audit = AuditLog.to_file(path, max_bytes=400, backups=2)
    for number in range(30):
        audit.record(
            AuditEntry(subject="s", action="PUT /v1/x", outcome=200, runtime_id=f"rt-{number}")
        )
    audit.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.log", "audit.log.1", "audit.log.2"]
    last = json.loads(path.read_text().splitlines()[-1])
    assert last["runtime_id"] == "rt-29"


def test_stdout_target_writes_lines_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    audit = AuditLog.open("-")
    audit.record(AuditEntry(subject="keb", action="DELETE /v1/clusters/{runtimeID}", outcome=200))
    audit.close()
    assert json.loads(capsys.readouterr().out)["subject"] == "keb"


def test_details_are_redacted_by_key() -> None:
    entry = AuditEntry(
        subject="s",
        action="POST /v1/clusters",
        outcome=200,
        detail={
            "kubeconfig": "apiVersion: v1",
            "nested": {"Authorization": "Bearer x", "count": 2},
        },
    )
    line = json.loads(entry.as_json())
    assert line["detail"] == {
        "kubeconfig": "<redacted>",
        "nested": {"Authorization": "<redacted>", "count": 2},
    }
    assert redact({"password": "p"}) == {"password": "<redacted>"}


def test_roles_order_viewer_operator_admin() -> None:
    assert Role.VIEWER < Role.OPERATOR < Role.ADMIN


async def test_a_flood_of_unauthenticated_posts_writes_a_bounded_number_of_lines(api: Api) -> None:
    body = cluster_body("rt-flood")
    transport = httpx.ASGITransport(api.app)  # no token: every request is refused
    async with httpx.AsyncClient(transport=transport, base_url="http://mothership.test") as anon:
        for _ in range(30):
            answers = await asyncio.gather(
                *(anon.post("/v1/clusters", json=body) for _ in range(100))
            )
            assert {a.status_code for a in answers} == {401}
    await api.client.put("/v1/clusters/rt-flood/status", json={"status": "reconcile_pending"})
    api.audit.close()  # ends the refusal window: its count is written
    lines = api.audit_lines()
    assert len(lines) == 3
    first, accepted, summary = lines
    assert (first["action"], first["outcome"], first["source"]) == (
        "POST /v1/clusters",
        401,
        "127.0.0.1",
    )
    assert (accepted["subject"], accepted["outcome"]) == ("admin-user", 404)
    assert "source" not in accepted
    assert summary["action"] == "refused requests"
    assert summary["source"] == "127.0.0.1"
    assert summary["detail"]["count"] == 2_999
    assert summary["detail"]["outcomes"] == {"401": 2_999}


def test_refusals_are_counted_per_source_and_window() -> None:
    now = [0.0]
    denials = DeniedAggregator(60, max_sources=2, clock=lambda: now[0])
    one, viewer = ("10.0.0.1", None), ("10.0.0.1", "viewer-user")
    assert denials.admit(one, 401) == (True, [])
    assert denials.admit(one, 403) == (False, [])
    assert denials.admit(one, 401) == (False, [])
    assert denials.admit(viewer, 403) == (True, [])  # authenticated: counted on its own
    assert denials.admit(("10.0.0.3", None), 401) == (True, [])  # over max_sources: "*"
    assert denials.admit(("10.0.0.4", None), 401) == (False, [])
    now[0] = 61
    first, ended = denials.admit(one, 401)
    assert first  # a new window
    assert [(e.source, e.subject, e.detail["count"], e.detail["outcomes"]) for e in ended] == [
        ("10.0.0.1", None, 2, {"401": 1, "403": 1}),
        ("*", None, 1, {"401": 1}),
    ]
    assert denials.due(everything=True) == []  # 10.0.0.1's new window has nothing to count


def test_rotated_files_older_than_max_age_are_removed(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    old, recent = tmp_path / "audit.log.2", tmp_path / "audit.log.1"
    for rotated in (old, recent):
        rotated.write_text("{}\n")
    day_ago = time.time() - 86_400
    os.utime(old, (day_ago, day_ago))
    audit = AuditLog.to_file(path, max_bytes=400, backups=5, max_age=3_600)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.log", "audit.log.1"]
    for number in range(30):
        audit.record(
            AuditEntry(subject="s", action="PUT /v1/x", outcome=200, runtime_id=f"{number}")
        )
    assert len(list(tmp_path.glob("audit.log.*"))) == 5  # the size limit: `backups` files
    for rotated in tmp_path.glob("audit.log.*"):
        if rotated.name != "audit.log.1":
            os.utime(rotated, (day_ago, day_ago))
    audit.flush()  # runs once per refusal window beside the app
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.log", "audit.log.1"]
    audit.close()
