"""The audit log: one JSON line per state-changing request (subject, action as route template,
runtime, outcome, scheduling/correlation ids), none for reads, rotation by size, redaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler.api.auth import Role
from reconciler.observability.audit import AuditEntry, AuditLog, redact
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
    assert all(
        set(line)
        <= {"time", "subject", "action", "runtime_id", "outcome", "scheduling_id", "correlation_id"}
        for line in lines
    )


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
