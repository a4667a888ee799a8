"""The mothership engine end to end: real apiserver, real charts, SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from reconciler.kube.cluster import Cluster
from reconciler.model.cluster import ClusterState, Head
from reconciler.model.kube_object import KubeObject
from reconciler.model.operation import Operation
from reconciler.model.status import ClusterStatus, OperationState
from reconciler.mothership.engine import Engine
from reconciler.mothership.invoker import CallableInvoker, InvokeResult
from reconciler.mothership.planner import Planner
from reconciler.mothership.settings import Settings
from reconciler.util.polling import poll_until
from tests.conftest import ClusterFactory
from tests.helpers.clusters import cluster_spec

S = ClusterStatus
EXAMPLES = Path(__file__).parents[2] / "examples" / "kyma-like"


def settings(tmp_path: Path, **overrides: Any) -> Settings:
    base: dict[str, Any] = {
        "data_dir": tmp_path / "data",
        "workspace": EXAMPLES,
        "sweep_interval": 0.5,
        "bookkeeping_interval": 0.5,
        "retry_backoff": 0.1,
        "max_retries": 1,
        "operation_timeout": 120,
    }
    return Settings(**{**base, **overrides})


async def wait_for(
    engine: Engine, runtime_id: str, statuses: set[ClusterStatus], timeout: float = 120
) -> ClusterState:
    async def reached() -> ClusterState | None:
        state = await engine.service.cluster(runtime_id)
        return state if state.status in statuses else None

    return await poll_until(reached, timeout=timeout, what=f"{runtime_id} to reach {statuses}")


def obj(api_version: str, kind: str, name: str, namespace: str = "") -> KubeObject:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return KubeObject({"apiVersion": api_version, "kind": kind, "metadata": meta})


@pytest.fixture
async def target(cluster_factory: ClusterFactory) -> str:
    """A fresh cluster with controllers and the kubelet stand-in; its kubeconfig text."""
    return (await cluster_factory(controller_manager=True, kubelet=True)).kubeconfig.read_text()


@pytest.mark.slow
async def test_cluster_lifecycle_ready_reconfigured_deleted_with_history(
    target: str, tmp_path: Path
) -> None:
    async with Engine(settings(tmp_path)) as engine:
        first = await engine.service.upsert_cluster(cluster_spec("rt-life", kubeconfig=target))
        ready = await wait_for(engine, "rt-life", {S.READY, S.ERROR})
        assert ready.status is S.READY, await engine.service.failures(ready)
        async with await Cluster.connect(target) as cluster:
            assert await cluster.get(obj("apps/v1", "Deployment", "istiod", "istio-system"))

        # a new configuration (one component fewer, another one reconfigured)
        changed = await engine.service.upsert_cluster(
            cluster_spec(
                "rt-life",
                kubeconfig=target,
                components=("cluster-essentials", "istio", "certificates", "app-gateway"),
                configuration={"app-gateway": [{"key": "replicas", "value": 2}]},
            )
        )
        assert changed.config_version > first.config_version
        await wait_for(engine, "rt-life", {S.RECONCILING})
        again = await wait_for(engine, "rt-life", {S.READY, S.ERROR})
        assert again.status is S.READY
        (latest, *_) = await engine.service.reconciliations(runtime_ids=["rt-life"])
        assert latest.config_version == changed.config_version
        async with await Cluster.connect(target) as cluster:
            gateway = await cluster.get(obj("apps/v1", "Deployment", "app-gateway", "kyma-system"))
            assert gateway is not None
            assert gateway.raw["spec"]["replicas"] == 2

        await engine.service.delete_cluster("rt-life")
        gone = await wait_for(engine, "rt-life", {S.DELETED, S.DELETE_ERROR})
        assert gone.status is S.DELETED, await engine.service.failures(gone)
        async with await Cluster.connect(target) as cluster:
            assert await cluster.get(obj("v1", "Namespace", "istio-system")) is None
        history = await engine.service.status_changes("rt-life", dt.timedelta(hours=1))
        assert [c.status for c in reversed(history)] == [
            S.RECONCILE_PENDING,
            S.RECONCILING,
            S.READY,
            S.RECONCILE_PENDING,
            S.RECONCILING,
            S.READY,
            S.DELETE_PENDING,
            S.DELETING,
            S.DELETED,
        ]
        old = await engine.service.cluster_at("rt-life", first.config_version)
        assert len(old.spec.kyma_config.components) == 7


@pytest.mark.slow
async def test_failing_component_is_reported_and_a_fixed_config_recovers(
    target: str, tmp_path: Path
) -> None:
    broken = {"app-gateway": [{"key": "replicas", "value": "two"}]}
    components = ("cluster-essentials", "istio", "certificates", "app-gateway", "eventing")
    async with Engine(settings(tmp_path)) as engine:
        await engine.service.upsert_cluster(
            cluster_spec("rt-fail", kubeconfig=target, components=components, configuration=broken)
        )
        failed = await wait_for(engine, "rt-fail", {S.READY, S.ERROR})
        assert failed.status is S.ERROR
        failures = await engine.service.failures(failed)
        assert [f.component for f in failures] == ["app-gateway"]
        assert "deployment.apps kyma-system/app-gateway: rejected" in failures[0].reason
        await engine.service.upsert_cluster(
            cluster_spec("rt-fail", kubeconfig=target, components=components)
        )
        fixed = await wait_for(engine, "rt-fail", {S.READY}, timeout=120)
        assert await engine.service.failures(fixed) == []


@pytest.fixture
async def noop_engine(tmp_path: Path) -> AsyncIterator[tuple[Engine, list[Operation]]]:
    seen: list[Operation] = []

    async def run(op: Operation, state: ClusterState) -> InvokeResult:
        seen.append(op)
        return InvokeResult(True)

    factory: Callable[[Planner], CallableInvoker] = lambda _planner: CallableInvoker(run)  # noqa: E731
    engine = Engine(settings(tmp_path, workspace=None, reconcile_interval=3600), invoker=factory)
    async with engine:
        yield engine, seen


def url_spec(runtime_id: str) -> Any:
    return cluster_spec(runtime_id).model_copy(
        update={
            "kyma_config": cluster_spec(runtime_id).kyma_config.model_copy(
                update={
                    "components": tuple(
                        c.model_copy(update={"url": f"/charts/{c.component}"})
                        for c in cluster_spec(runtime_id).kyma_config.components
                    )
                }
            )
        }
    )


async def test_disabled_cluster_is_never_scheduled_and_forcing_runs_it_at_once(
    noop_engine: tuple[Engine, list[Operation]],
) -> None:
    engine, seen = noop_engine
    await engine.service.upsert_cluster(url_spec("rt-off"))
    await wait_for(engine, "rt-off", {S.READY}, timeout=20)
    runs = len(seen)
    await engine.service.set_status("rt-off", S.RECONCILE_DISABLED)
    await engine.service.upsert_cluster(
        url_spec("rt-off").model_copy(update={"kubeconfig": "changed: true\n"})
    )
    await engine.scheduler.sweep()
    await asyncio.sleep(0)  # give the loops a turn: nothing may be scheduled
    assert (await engine.service.cluster("rt-off")).status is S.RECONCILE_DISABLED
    assert len(seen) == runs
    forced = await engine.service.set_status("rt-off", S.RECONCILE_PENDING)
    assert forced.status is S.RECONCILE_PENDING
    await wait_for(engine, "rt-off", {S.READY}, timeout=5)
    assert len(seen) == 2 * runs


async def test_every_operation_runs_exactly_once_in_priority_order(
    noop_engine: tuple[Engine, list[Operation]],
) -> None:
    engine, seen = noop_engine
    for i in range(10):
        await engine.service.upsert_cluster(url_spec(f"rt-{i}"))
    for i in range(10):
        await wait_for(engine, f"rt-{i}", {S.READY}, timeout=30)
    assert len(seen) == len({op.key for op in seen}) == 70
    order = [op.component for op in seen if op.runtime_id == "rt-3"]
    assert order[:3] == ["cluster-essentials", "istio", "certificates"]
    rec, ops = await engine.service.reconciliation(
        (await engine.service.reconciliations(runtime_ids=["rt-3"]))[0].scheduling_id
    )
    assert {op.state for op in ops} == {OperationState.DONE}
    assert not rec.active


async def test_scheduler_keeps_at_most_the_configured_number_of_runs_active(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """...and reads no more due clusters than it has room for: at 500 active runs and 1,000
    pending clusters each sweep read them all and threw them away."""
    from tests.api.support import Gate

    gate = Gate("istio")
    engine = Engine(
        settings(tmp_path, workspace=None, max_active_reconciliations=2), invoker=gate.factory
    )
    async with engine:
        for i in range(5):
            await engine.service.upsert_cluster(url_spec(f"rt-bp-{i}"))
        await gate.entered.wait()
        await engine.scheduler.sweep()
        assert await engine.repo.active_count() == 2
        limits: list[int] = []
        heads = engine.inventory.heads

        async def counted(*args: Any, limit: int = 1000, **kwargs: Any) -> list[Head]:
            limits.append(limit)
            return await heads(*args, limit=limit, **kwargs)

        monkeypatch.setattr(engine.inventory, "heads", counted)
        await engine.scheduler.sweep()
        assert limits == []  # no room: nothing read
        gate.release.set()
        for i in range(5):
            await wait_for(engine, f"rt-bp-{i}", {S.READY}, timeout=30)


async def test_operation_done_says_how_long_and_what_changed_and_a_no_op_stays_below_info(
    tmp_path: Path,
) -> None:
    async def run(op: Operation, state: ClusterState) -> InvokeResult:
        return InvokeResult(True, changed=3 if op.component == "istio" else 0)

    factory: Callable[[Planner], CallableInvoker] = lambda _planner: CallableInvoker(run)  # noqa: E731
    with capture_logs() as lines:
        engine = Engine(
            settings(tmp_path, workspace=None, reconcile_interval=3600), invoker=factory
        )
        async with engine:
            await engine.service.upsert_cluster(url_spec("rt-logs"))
            await wait_for(engine, "rt-logs", {S.READY}, timeout=30)

    done = [line for line in lines if line["event"] == "operation done"]
    assert len(done) == 7
    changed = [line for line in done if line["component"] == "istio"]
    assert changed[0]["log_level"] == "info"
    assert changed[0]["changed"] == 3
    assert changed[0]["seconds"] >= 0
    assert {line["log_level"] for line in done if line["component"] != "istio"} == {"debug"}


async def test_the_work_of_an_operation_logs_with_its_runtime_and_scheduling_ids(
    tmp_path: Path,
) -> None:
    """Whatever logs inside an operation (the core, a component's own actions) merges these."""
    seen: list[dict[str, Any]] = []

    async def run(op: Operation, state: ClusterState) -> InvokeResult:
        seen.append({**structlog.contextvars.get_contextvars(), "expected": op.scheduling_id})
        return InvokeResult(True)

    factory: Callable[[Planner], CallableInvoker] = lambda _planner: CallableInvoker(run)  # noqa: E731
    async with Engine(
        settings(tmp_path, workspace=None, reconcile_interval=3600), invoker=factory
    ) as engine:
        await engine.service.upsert_cluster(url_spec("rt-ids"))
        await wait_for(engine, "rt-ids", {S.READY}, timeout=30)

    assert seen
    assert all(bound["runtime_id"] == "rt-ids" for bound in seen)
    assert all(bound["scheduling_id"] == bound["expected"] for bound in seen)
