"""The admin CLI at 3 a.m., against a served API whose engine (SQLite and PostgreSQL) fails a
component on demand: health `failing` in status/list/history through whole retry cycles, enable
that does not paint it green, `--watch`, `register --wait`, `delete --forget` with its audit
line, whole IDs in narrow tables, durations and retries in `reconciliation info`."""

from __future__ import annotations

import asyncio
import json
import uuid
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from reconciler.api.auth import Role
from reconciler.devcluster import PostgresServer
from reconciler.model.cluster import ClusterState
from reconciler.model.operation import Operation
from reconciler.mothership.engine import Engine
from reconciler.mothership.invoker import CallableInvoker, Invoker, InvokeResult
from reconciler.mothership.planner import Planner
from reconciler.observability.logging import configure_logging
from reconciler.util.polling import poll_until
from tests.api.support import Tokens
from tests.cli.test_admin_cli import EXAMPLES, as_json, served_api
from tests.cli.test_admin_cli import cli as admin_cli
from tests.helpers.invokers import new_key_file

UNREACHABLE = "cannot reach the apiserver at https://10.0.0.1:443: ConnectError: refused"


async def cli(*args: str) -> Result:
    return await admin_cli(*args, env={"COLUMNS": "80"})  # IDs stay whole even so


async def register(runtime_id: str, kubeconfig: Path, *options: str) -> Result:
    """`cluster register ... --wait`: ends once a run of the registered configuration ended."""
    return await cli(
        "cluster", "register", runtime_id, "--kubeconfig", str(kubeconfig), "-w", str(EXAMPLES),
        "--wait", "--timeout", "60", *options,
    )  # fmt: skip


@dataclass
class Breaker:
    """Fails `component` with `reason` (transient) while `broken`."""

    component: str = "istio"
    reason: str = "component istio: deployment istio-system/istiod: 0/1 replicas available"
    broken: bool = True
    runs: list[str] = field(default_factory=list)

    def factory(self, _planner: Planner) -> Invoker:
        async def invoke(op: Operation, _state: ClusterState) -> InvokeResult:
            self.runs.append(op.component)
            if self.broken and op.component == self.component:
                return InvokeResult(False, self.reason, transient=True)
            return InvokeResult(True)

        return CallableInvoker(invoke)


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    if request.param == "sqlite":
        return {}
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = asyncio.run(server.create_database(f"fleetcli_{uuid.uuid4().hex[:10]}"))
    return {"database_url": url, "encryption_key_file": new_key_file(tmp_path / "key")}


def served(
    tmp_path: Path, tokens: Tokens, breaker: Breaker, database: dict[str, Any]
) -> AbstractAsyncContextManager[tuple[Engine, str]]:
    """The API over an engine with `breaker`'s invoker, a whole retry cycle every second."""
    return served_api(
        tmp_path, tokens, breaker.factory, max_retries=0, retry_interval=0.5, **database
    )


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    """A kubeconfig for the no-cluster engine; the engine's logs go to stderr (JSON lines),
    so stdout holds only the CLI's output."""
    configure_logging(json_lines=True)
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\n")
    return path


async def test_a_failing_cluster_reads_failing_in_every_command_until_a_run_succeeds(
    tmp_path: Path, database: dict[str, Any], kubeconfig: Path
) -> None:
    tokens = Tokens.write(tmp_path)
    breaker = Breaker()
    runtime = f"rt-{uuid.uuid4()}"  # as long as the IDs people paste
    async with served(tmp_path, tokens, breaker, database) as (_, url):
        admin = ("--url", url, "--token", tokens.by_role[Role.ADMIN])
        viewer = ("--url", url, "--token", tokens.by_role[Role.VIEWER])
        # register --wait: ends with the first finished run, failing: exit 1, naming the cause
        waited = await register(runtime, kubeconfig, *admin)
        assert waited.exit_code == 1, waited.output
        assert "failing since" in waited.output
        assert "istio" in waited.output

        # through several whole retry cycles: failing in status, list and history, never
        # reconciling, though the wire status is `reconciling` during each retry
        seen_status: set[str] = set()
        for _ in range(15):
            status = as_json(await cli("cluster", "status", runtime, *viewer, "-o", "json"))
            seen_status.add(status["status"])
            assert status["health"]["health"] == "failing", status
            assert status["health"]["component"] == "istio"
            assert status["health"]["consecutiveFailures"] >= 1
            table = (await cli("cluster", "status", runtime, *viewer)).stdout
            assert "failing" in table
            assert runtime in table  # whole, in an 80-column terminal
            listed = (await cli("cluster", "list", *viewer)).stdout
            assert runtime in listed
            assert "failing" in listed
        assert "reconciling" in seen_status  # the retries did run meanwhile
        runs = as_json(await cli("cluster", "status", runtime, *viewer, "-o", "json"))
        assert runs["health"]["consecutiveFailures"] >= 2
        history = as_json(await cli("cluster", "history", runtime, *viewer, "-o", "json"))
        retrying = [c for c in history["statusChanges"] if c["status"] == "reconciling"]
        assert retrying[0]["health"] == "failing"  # a retry of a failing cluster

        # disable and enable: still failing until a run proves otherwise
        operator = ("--url", url, "--token", tokens.by_role[Role.OPERATOR], "-o", "json")
        assert as_json(await cli("cluster", "disable", runtime, *operator))["status"] == (
            "reconcile_disabled"
        )
        enabled = as_json(await cli("cluster", "enable", runtime, *operator))
        assert enabled["status"] == "reconcile_pending"  # a run re-verifies it at once
        assert enabled["health"]["health"] == "failing"
        for _ in range(5):
            again = as_json(await cli("cluster", "status", runtime, *viewer, "-o", "json"))
            assert again["health"]["health"] == "failing"

        # --watch until healthy, once the cause is gone
        breaker.broken = False
        watched = await cli(
            "cluster", "status", runtime, "--watch", "--interval", "0.2", "--until", "healthy",
            "--timeout", "60", *viewer,
        )  # fmt: skip
        assert watched.exit_code == 0, watched.output
        lines = watched.stdout.splitlines()
        assert "failing since" in lines[0]
        assert lines[-1].split()[-1] == "healthy"
        healthy = as_json(await cli("cluster", "status", runtime, *viewer, "-o", "json"))
        assert healthy["health"]["lastSuccess"]

        # reconciliation info: per-operation duration and retries, IDs whole
        (latest, *_) = as_json(
            await cli("reconciliation", "list", "--runtime-id", runtime, *viewer, "-o", "json")
        )
        info = await cli("reconciliation", "info", latest["schedulingID"], *viewer, "-o", "wide")
        assert info.exit_code == 0, info.output
        assert "duration" in info.stdout
        assert "retries" in info.stdout
        assert latest["schedulingID"] in info.stdout
        info_json = as_json(
            await cli("reconciliation", "info", latest["schedulingID"], *viewer, "-o", "json")
        )
        assert all(op["duration"] >= 0 for op in info_json["operations"])
        assert all("retries" in op for op in info_json["operations"])


async def test_delete_uninstalls_and_forget_removes_a_dead_cluster_with_an_audit_line(
    tmp_path: Path, database: dict[str, Any], kubeconfig: Path
) -> None:
    tokens = Tokens.write(tmp_path)
    breaker = Breaker(broken=False)
    async with served(tmp_path, tokens, breaker, database) as (engine, url):
        admin = ("--url", url, "--token", tokens.by_role[Role.ADMIN])
        for name in ("rt-dead", "rt-live", "rt-gone"):
            registered = await register(name, kubeconfig, *admin)
            assert registered.exit_code == 0, registered.output
            assert "healthy" in registered.stdout
        # registering it again unchanged waits for the run that re-post starts
        runs = len(await engine.service.reconciliations(runtime_ids=["rt-live"]))
        again = await register("rt-live", kubeconfig, *admin)
        assert again.exit_code == 0, again.output
        assert len(await engine.service.reconciliations(runtime_ids=["rt-live"])) == runs + 1

        # a normal delete uninstalls (a delete run) and ends `deleted`
        deleted = as_json(await cli("cluster", "delete", "rt-gone", *admin, "-o", "json"))
        assert deleted["status"] == "delete_pending"

        async def gone() -> bool:
            listed = as_json(await cli("cluster", "list", *admin, "-o", "json"))
            return "rt-gone" not in {c["runtimeID"] for c in listed}

        await poll_until(gone, timeout=30, what="rt-gone uninstalled")

        # forgetting a healthy cluster is refused, naming why, unless confirmed
        refused = await cli("cluster", "delete", "rt-live", "--forget", *admin)
        assert refused.exit_code == 1
        assert "is healthy" in refused.output
        assert "confirm" in refused.output
        viewer = ("--url", url, "--token", tokens.by_role[Role.VIEWER])
        denied = await cli("cluster", "delete", "rt-live", "--forget", "--yes", *viewer)
        assert denied.exit_code == 1
        assert "403" in denied.output
        confirmed = as_json(
            await cli("cluster", "delete", "rt-live", "--forget", "--yes", *admin, "-o", "json")
        )
        assert confirmed["status"] == "deleted"

        # the infrastructure of rt-dead goes away: its delete can never finish
        breaker.component, breaker.reason, breaker.broken = "istio", UNREACHABLE, True
        as_json(await cli("cluster", "delete", "rt-dead", *admin, "-o", "json"))

        async def stuck() -> bool:
            status = as_json(await cli("cluster", "status", "rt-dead", *admin, "-o", "json"))
            return bool(status["health"]["health"] == "unreachable")

        await poll_until(stuck, timeout=30, what="rt-dead's delete stuck on an unreachable cluster")
        status = as_json(await cli("cluster", "status", "rt-dead", *admin, "-o", "json"))
        assert status["status"] == "deleting"
        assert status["health"]["deleting"] is True
        assert "delete cannot finish" in status["health"]["summary"]
        forgotten = as_json(
            await cli("cluster", "delete", "rt-dead", "--forget", *admin, "-o", "json")
        )
        assert forgotten["status"] == "deleted"
        listed = as_json(await cli("cluster", "list", *admin, "-o", "json"))
        assert [c["runtimeID"] for c in listed] == []
        runs = await engine.service.reconciliations(runtime_ids=["rt-dead"], last=1)
        assert not runs[0].active  # the stuck delete run ended with it

    lines = [json.loads(line) for line in (tmp_path / "audit.log").read_text().splitlines()]
    forgets = [line for line in lines if line["action"] == "POST /v1/clusters/{runtimeID}/forget"]
    assert [(f["runtime_id"], f["outcome"], f["subject"]) for f in forgets] == [
        ("rt-live", 409, "admin-user"),
        ("rt-live", 403, "viewer-user"),
        ("rt-live", 200, "admin-user"),
        ("rt-dead", 200, "admin-user"),
    ]
