"""The fleet tells the truth, on the real test bed (SQLite and PostgreSQL): a cluster whose
Deployment never becomes ready and a cluster whose apiserver was stopped are failing (the dead
one `unreachable`) after their first run, and stay so at every poll through whole retry cycles,
in the API, the admin CLI's output and the metrics, while their wire status moves through
`reconciling`; disable and enable keep `failing` until a run succeeds (a kubelet appears); a
delete of the dead cluster cannot finish and says so, and `cluster delete --forget` removes it
with an audit line."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import generate_latest
from typer.testing import CliRunner, Result

from reconciler.api import ApiSettings
from reconciler.api.app import create_app
from reconciler.api.auth import Role
from reconciler.charts.sources import ChartCache
from reconciler.cli.main import app
from reconciler.core.actions import ActionRegistry
from reconciler.core.charts import HelmChartProvider
from reconciler.core.runner import ComponentReconciler
from reconciler.mothership.engine import Engine
from reconciler.mothership.invoker import InProcessInvoker, Invoker
from reconciler.mothership.planner import Planner
from reconciler.observability.logging import configure_logging
from reconciler.util.polling import poll_until
from tests.api.support import Tokens, accept_kubeconfig, cluster_body
from tests.conftest import ClusterFactory, KubeTarget, kubelet_running
from tests.helpers.charts import DEPLOYMENT, make_chart
from tests.mothership.conftest import SettingsFactory
from tests.remote.support import serve_app

pytestmark = pytest.mark.slow
BAD = ("failing", "unreachable")


async def cli(*args: str) -> Result:
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env={"COLUMNS": "100"})


def in_process(cache: Path, timeout: float) -> Any:
    """The real core in process, with a short readiness deadline."""

    def factory(planner: Planner) -> Invoker:
        core = ComponentReconciler(HelmChartProvider(ChartCache(cache)), ActionRegistry())
        return InProcessInvoker(planner, core, timeout=timeout)

    return factory


@dataclass
class Fleet:
    engine: Engine
    url: str
    tokens: Tokens
    audit: Path
    http: httpx.AsyncClient

    def args(self, role: Role, *more: str) -> tuple[str, ...]:
        return ("--url", self.url, "--token", self.tokens.by_role[role], *more)

    async def status(self, runtime_id: str) -> dict[str, Any]:
        answer = await self.http.get(f"/v1/clusters/{runtime_id}/status")
        assert answer.status_code == 200, answer.text
        data: dict[str, Any] = answer.json()
        return data

    async def cli_json(self, *args: str) -> Any:
        result = await cli(*args, *self.args(Role.ADMIN, "-o", "json"))
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    def metric(self, name: str, runtime_id: str) -> str:
        text = generate_latest(self.engine.metrics.registry).decode()
        return "\n".join(
            line for line in text.splitlines() if line.startswith(name + "{") and runtime_id in line
        )


@asynccontextmanager
async def fleet(settings: SettingsFactory, tmp_path: Path) -> AsyncIterator[Fleet]:
    configure_logging(json_lines=True)
    tokens = Tokens.write(tmp_path)
    audit = tmp_path / "audit.log"
    engine_settings = settings(
        max_retries=0,  # one attempt per run: a retry cycle is one run per retry_interval
        retry_interval=1.0,
        metrics_interval=0.2,
        sweep_interval=0.3,
        bookkeeping_interval=0.3,
    )
    async with Engine(engine_settings, invoker=in_process(tmp_path / "cache", timeout=3)) as engine:
        api = create_app(
            engine.service,
            settings=ApiSettings(tokens_file=tokens.path, audit_log=str(audit)),
            check_kubeconfig=accept_kubeconfig,
        )
        async with serve_app(api) as url:
            headers = tokens.header(Role.VIEWER)
            async with httpx.AsyncClient(base_url=url, headers=headers) as http:
                yield Fleet(engine, url, tokens, audit, http)


def body(runtime_id: str, kubeconfig: str, chart: Path, namespace: str) -> dict[str, Any]:
    data = cluster_body(runtime_id, kubeconfig=kubeconfig, components=(chart.name,))
    (component,) = data["kymaConfig"]["components"]
    component.update({"URL": str(chart), "namespace": namespace, "configuration": []})
    return data


async def test_failing_and_dead_clusters_read_failing_everywhere_until_proven_otherwise(
    store_settings: SettingsFactory,
    kube_cluster: KubeTarget,
    cluster_factory: ClusterFactory,
    namespace: str,
    tmp_path: Path,
) -> None:
    dead = await cluster_factory()
    dead_kubeconfig = dead.kubeconfig.read_text()
    assert dead.stop is not None
    await dead.stop()  # its infrastructure is gone
    chart = make_chart(tmp_path, "stuck-app", {"deploy.yaml": DEPLOYMENT})
    live_kubeconfig = kube_cluster.kubeconfig.read_text()
    async with fleet(store_settings, tmp_path) as f:
        admin = httpx.AsyncClient(base_url=f.url, headers=f.tokens.header(Role.ADMIN))
        async with admin:
            for runtime_id, kubeconfig in (
                ("rt-stuck", live_kubeconfig),
                ("rt-dead", dead_kubeconfig),
            ):
                created = await admin.post(
                    "/v1/clusters", json=body(runtime_id, kubeconfig, chart, namespace)
                )
                assert created.status_code == 200, created.text

            # failing within one run: the first time it is bad, one run has failed
            first: dict[str, dict[str, Any]] = {}

            async def both_bad() -> bool:
                for runtime_id in ("rt-stuck", "rt-dead"):
                    health = (await f.status(runtime_id))["health"]
                    if runtime_id not in first and health["health"] in BAD:
                        first[runtime_id] = health
                    if health["health"] not in ("progressing", *BAD):
                        raise AssertionError(f"{runtime_id}: {health}")
                return len(first) == 2

            await poll_until(both_bad, timeout=90, what="both clusters failing")
            assert first["rt-stuck"]["health"] == "failing"
            assert first["rt-stuck"]["consecutiveFailures"] == 1
            assert first["rt-stuck"]["component"] == "stuck-app"
            assert "0/1 replicas available" in first["rt-stuck"]["reason"]
            assert first["rt-dead"]["health"] == "unreachable"
            assert first["rt-dead"]["consecutiveFailures"] == 1
            assert "cannot reach the apiserver" in first["rt-dead"]["reason"]

            # through whole retry cycles: never anything but failing, wherever one looks
            statuses: dict[str, set[str]] = {"rt-stuck": set(), "rt-dead": set()}
            cycles_from = {r: first[r]["consecutiveFailures"] for r in first}
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                for runtime_id in ("rt-stuck", "rt-dead"):
                    answer = await f.status(runtime_id)
                    statuses[runtime_id].add(answer["status"])
                    assert answer["health"]["health"] in BAD, answer
                    listed = await f.cli_json("cluster", "list")
                    (item,) = [c for c in listed if c["runtimeID"] == runtime_id]
                    assert item["health"]["health"] in BAD, item
                    table = await cli("cluster", "status", runtime_id, *f.args(Role.VIEWER))
                    assert table.exit_code == 0, table.output
                    assert ("failing" in table.stdout) or ("unreachable" in table.stdout)
                    gauge = f.metric("reconciler_cluster_health", runtime_id)
                    assert 'health="failing"' in gauge or 'health="unreachable"' in gauge, gauge
                    assert "progressing" not in gauge
                    assert "healthy" not in gauge
                done = {
                    r: (await f.status(r))["health"]["consecutiveFailures"] - cycles_from[r]
                    for r in cycles_from
                }
                if min(done.values()) >= 2 and "reconciling" in statuses["rt-stuck"]:
                    break
            assert min(done.values()) >= 2, done  # two more whole runs were watched
            assert "reconciling" in statuses["rt-stuck"]  # the wire status moved meanwhile

            async def counted() -> bool:  # the gauges follow within a metrics interval
                failures = f.metric("reconciler_cluster_consecutive_failures", "rt-stuck")
                return float(failures.split()[-1]) >= 3

            await poll_until(counted, timeout=10, what="the failure count in the metrics")
            history = (await f.http.get("/v1/clusters/rt-stuck/statusChanges")).json()
            retries = [c for c in history["statusChanges"] if c["status"] == "reconciling"]
            assert retries[0]["health"] == "failing"

            # disable and enable: failing until a run proves otherwise
            disabled = await admin.put(
                "/v1/clusters/rt-stuck/status", json={"status": "reconcile_disabled"}
            )
            assert disabled.json()["health"]["health"] == "disabled"
            enabled = await admin.put("/v1/clusters/rt-stuck/status", json={"status": "ready"})
            assert enabled.json()["status"] == "reconcile_pending"
            assert enabled.json()["health"]["health"] == "failing"
            before = enabled.json()["health"]["consecutiveFailures"]

            async def failed_again() -> bool:
                health = (await f.status("rt-stuck"))["health"]
                assert health["health"] == "failing", health
                return bool(health["consecutiveFailures"] > before)

            await poll_until(failed_again, timeout=60, what="the re-verifying run to fail")

            # the cause goes away (a kubelet runs the pods): the next run proves it healthy
            async with kubelet_running(kube_cluster, namespace):

                async def healthy() -> bool:
                    answer = await f.status("rt-stuck")
                    return bool(answer["health"]["health"] == "healthy")

                await poll_until(healthy, timeout=90, what="rt-stuck healthy")
            assert (await f.status("rt-stuck"))["status"] == "ready"
            stamp = f.metric(
                "reconciler_cluster_last_successful_reconcile_timestamp_seconds", "rt-stuck"
            )

            async def stamped() -> bool:
                nonlocal stamp
                stamp = f.metric(
                    "reconciler_cluster_last_successful_reconcile_timestamp_seconds", "rt-stuck"
                )
                return bool(stamp)

            await poll_until(stamped, timeout=10, what="the last-success gauge")
            assert abs(float(stamp.split()[-1]) - time.time()) < 300

            # the dead cluster: a delete that cannot finish says so; forget removes it
            await f.cli_json("cluster", "delete", "rt-dead")

            async def stuck_delete() -> bool:
                health = (await f.status("rt-dead"))["health"]
                return bool(health["deleting"] and health["health"] == "unreachable")

            await poll_until(stuck_delete, timeout=60, what="rt-dead's delete stuck")
            summary = (await f.status("rt-dead"))["health"]["summary"]
            assert "delete cannot finish" in summary
            table = await cli("cluster", "list", *f.args(Role.VIEWER))
            (row,) = [line for line in table.stdout.splitlines() if "rt-dead" in line]
            assert "unreachable" in row
            watched = await cli(
                "cluster", "status", "rt-dead", "--watch", "--until", "unreachable",
                *f.args(Role.VIEWER),
            )  # fmt: skip
            (line,) = watched.stdout.splitlines()  # one line a change: never wrapped
            assert "deleting" in line
            assert "(delete cannot finish)" in line
            forgotten = await f.cli_json("cluster", "delete", "rt-dead", "--forget")
            assert forgotten["status"] == "deleted"
            listed = await f.cli_json("cluster", "list")
            assert [c["runtimeID"] for c in listed] == ["rt-stuck"]
    audit = [json.loads(line) for line in f.audit.read_text().splitlines()]
    assert {
        (a["action"], a["runtime_id"], a["outcome"], a["subject"])
        for a in audit
        if a["action"].endswith("/forget")
    } == {("POST /v1/clusters/{runtimeID}/forget", "rt-dead", 200, "admin-user")}
