""" "Why not ready": a Deployment that never becomes available (no kubelet on the test bed) is
named with its condition on the operation while it runs and after it failed, in the service, the
`/v1/reconciliations/{id}/info` API and the admin CLI. In-process workers, SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from typer.testing import CliRunner

from reconciler.api import ApiSettings
from reconciler.api.app import create_app
from reconciler.cli.main import app as cli_app
from reconciler.model.operation import Operation
from reconciler.model.status import ClusterStatus, OperationState
from reconciler.mothership.engine import Engine
from reconciler.util.polling import poll_until
from tests.conftest import KubeTarget
from tests.helpers.charts import DEPLOYMENT, make_chart
from tests.helpers.clusters import cluster_spec
from tests.mothership.conftest import SettingsFactory
from tests.remote.support import serve_app


async def _operation(engine: Engine, runtime_id: str) -> Operation | None:
    runs = await engine.service.reconciliations(runtime_ids=[runtime_id])
    if not runs:
        return None
    _, (op,) = await engine.service.reconciliation(runs[0].scheduling_id)
    return op


async def test_a_deployment_that_never_gets_ready_is_named_while_running_and_after_failure(
    store_settings: SettingsFactory, kube_cluster: KubeTarget, namespace: str, tmp_path: Path
) -> None:
    chart = make_chart(tmp_path, "web", {"deploy.yaml": DEPLOYMENT}, {"replicas": 1})
    base = cluster_spec("rt-blocked", kubeconfig=kube_cluster.kubeconfig.read_text())
    spec = base.model_copy(
        update={
            "kyma_config": base.kyma_config.model_validate(
                {
                    "version": "1.0",
                    "components": [{"component": "web", "namespace": namespace, "URL": str(chart)}],
                }
            )
        }
    )
    expected = f"deployment {namespace}/web: 0/1 replicas available"
    settings = store_settings(
        max_retries=0, operation_timeout=12, heartbeat_interval=0.5, retry_interval=3600
    )
    async with Engine(settings) as engine:
        await engine.service.upsert_cluster(spec)

        async def blocked_while_running() -> Operation | None:
            op = await _operation(engine, "rt-blocked")
            running = op is not None and op.state is OperationState.IN_PROGRESS
            return op if running and op.blocker == expected else None

        await poll_until(blocked_while_running, timeout=60, what=f"blocker '{expected}' stored")

        async def failed() -> bool:
            status = (await engine.service.cluster("rt-blocked")).status
            return status in (ClusterStatus.ERROR, ClusterStatus.RECONCILE_ERROR_RETRYABLE)

        await poll_until(failed, timeout=60, what="the cluster to fail")
        op = await _operation(engine, "rt-blocked")
        assert op is not None
        assert op.state is OperationState.ERROR
        assert op.blocker == expected  # still there after the failure

        api = create_app(engine.service, settings=ApiSettings(auth="none", audit_log="-"))
        async with serve_app(api) as url:
            info = await asyncio.to_thread(
                CliRunner().invoke,
                cli_app,
                ["reconciliation", "info", op.scheduling_id, "--url", url, "-o", "json"],
            )
            assert info.exit_code == 0, info.output
            assert f'"blocker": "{expected}"' in info.stdout
            table = await asyncio.to_thread(
                CliRunner().invoke,
                cli_app,
                ["reconciliation", "info", op.scheduling_id, "--url", url],
                env={"COLUMNS": "400"},
            )
            assert "blocked by" in table.stdout
            assert expected in table.stdout
