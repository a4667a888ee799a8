"""The component reconciler core against the real apiserver, one component per test namespace."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from reconciler.charts.sources import ChartCache
from reconciler.core.actions import ActionContext, ActionRegistry
from reconciler.core.charts import HelmChartProvider
from reconciler.core.runner import ComponentReconciler
from reconciler.kube import records
from reconciler.kube.cluster import Cluster
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import ChartRef, ProgressEvent, ProgressState, Task, TaskType
from tests.conftest import KubeTarget
from tests.helpers.charts import CONFIGMAPS, DEPLOYMENT, make_chart
from tests.helpers.counting import recording_cluster


def task(chart: Path, namespace: str, **changes: Any) -> Task:
    base = Task(
        component="web",
        namespace=namespace,
        version="1.0.0",
        source=ChartRef(str(chart)),
        timeout=30,
    )
    return Task(**{**base.__dict__, **changes})


async def resource_versions(cluster: Cluster, namespace: str) -> dict[str, str]:
    found = {}
    for kind, api in (("ConfigMap", "v1"), ("Deployment", "apps/v1")):
        info = await cluster.mapper.resolve(api, kind)
        for obj in await cluster.list(info, namespace=namespace):
            found[f"{kind}/{obj.name}"] = obj.metadata["resourceVersion"]
    return found


@pytest.mark.usefixtures("kubelet")
async def test_reconcile_applies_labels_records_inventory_and_waits_until_ready(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str, tmp_path: Path
) -> None:
    chart = make_chart(
        tmp_path,
        "web",
        {"deploy.yaml": DEPLOYMENT, "cms.yaml": CONFIGMAPS},
        {"replicas": 2, "configmaps": ["a", "b"]},
    )
    events: list[ProgressEvent] = []
    outcome = await reconciler.run(task(chart, namespace), cluster, events.append)
    assert outcome.ok, outcome.error
    assert events[-1].state is ProgressState.SUCCESS
    assert any(e.phase == "waiting" for e in events)
    live = await cluster.get(
        KubeObject(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "namespace": namespace},
            }
        )
    )
    assert live is not None
    assert live.labels["reconciler.kyma-project.io/managed-by"] == "reconciler"
    assert live.labels["reconciler.kyma-project.io/origin-version"] == "1.0.0"
    assert live.raw["status"]["availableReplicas"] == 2
    record = await records.read(cluster, "web", namespace)
    assert record is not None
    assert record.state == "applied"
    assert {e.name for e in record.entries} == {"web", "a", "b"}


@pytest.mark.usefixtures("kubelet")
async def test_second_reconcile_changes_no_resource_version(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str, tmp_path: Path
) -> None:
    chart = make_chart(
        tmp_path,
        "web",
        {"deploy.yaml": DEPLOYMENT, "cms.yaml": CONFIGMAPS},
        {"configmaps": ["a", "b"]},
    )
    assert (await reconciler.run(task(chart, namespace), cluster)).ok
    before = await resource_versions(cluster, namespace)
    again = await reconciler.run(task(chart, namespace), cluster)
    assert again.ok
    assert again.changed == []
    after = await resource_versions(cluster, namespace)
    assert after == before


async def test_drift_is_reverted_and_reported(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str, tmp_path: Path
) -> None:
    chart = make_chart(tmp_path, "web", {"cms.yaml": CONFIGMAPS}, {"configmaps": ["a", "b"]})
    assert (await reconciler.run(task(chart, namespace), cluster)).ok
    await cluster.client.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/configmaps/a",
        body={"data": {"greeting": "tampered"}},
        content_type="application/merge-patch+json",
    )
    outcome = await reconciler.run(task(chart, namespace), cluster)
    assert [k.name for k in outcome.changed] == ["a"]
    live = await cluster.get(
        KubeObject(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "a", "namespace": namespace},
            }
        )
    )
    assert live is not None
    assert live.raw["data"]["greeting"] == "hello"


async def test_upgrade_prunes_what_the_new_version_no_longer_renders(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str, tmp_path: Path
) -> None:
    chart = make_chart(tmp_path, "web", {"cms.yaml": CONFIGMAPS}, {"configmaps": ["a", "b"]})
    assert (await reconciler.run(task(chart, namespace), cluster)).ok
    outcome = await reconciler.run(
        task(chart, namespace, version="2.0.0", configuration={"configmaps": ["a"]}), cluster
    )
    assert outcome.ok, outcome.error
    assert [k.name for k in outcome.pruned] == ["b"]
    assert set(await resource_versions(cluster, namespace)) == {
        "ConfigMap/a",
        "ConfigMap/kube-root-ca.crt",
        f"ConfigMap/{records.configmap_name('web')}",
    }


async def test_readiness_timeout_says_what_is_missing_and_reports_it_while_waiting(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str, tmp_path: Path
) -> None:
    chart = make_chart(tmp_path, "web", {"deploy.yaml": DEPLOYMENT}, {"replicas": 2})
    events: list[ProgressEvent] = []
    outcome = await reconciler.run(task(chart, namespace, timeout=2), cluster, events.append)
    assert not outcome.ok
    missing = f"deployment {namespace}/web: 0/2 replicas available"
    assert missing in outcome.error
    assert outcome.error.startswith("component web:")
    blockers = [e.blocker for e in events if e.blocker]
    assert blockers[-1] == missing  # the "why not ready" drivers store and show
    assert all(e.state is ProgressState.RUNNING for e in events if e.blocker)


async def test_delete_removes_objects_record_and_owned_namespace(
    cluster: Cluster, reconciler: ComponentReconciler, tmp_path: Path
) -> None:
    chart = make_chart(tmp_path, "web", {"cms.yaml": CONFIGMAPS}, {"configmaps": ["a"]})
    target = task(chart, "owned-by-web", wait=False)
    assert (await reconciler.run(target, cluster)).ok
    outcome = await reconciler.run(task(chart, "owned-by-web", type=TaskType.DELETE), cluster)
    assert outcome.ok, outcome.error
    namespace = KubeObject(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "owned-by-web"}}
    )
    assert await cluster.get(namespace) is None


async def test_broken_template_fails_with_the_chart_named(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str, tmp_path: Path
) -> None:
    chart = make_chart(tmp_path, "web", {"bad.yaml": "{{ .Values.x.y.z }"})
    outcome = await reconciler.run(task(chart, namespace), cluster)
    assert not outcome.ok
    assert "component web" in outcome.error
    assert "bad.yaml" in outcome.error
    assert await records.read(cluster, "web", namespace) is None


async def test_rejected_object_is_named_and_the_record_still_lists_what_was_attempted(
    cluster: Cluster, reconciler: ComponentReconciler, namespace: str, tmp_path: Path
) -> None:
    chart = make_chart(
        tmp_path, "web", {"cms.yaml": CONFIGMAPS}, {"configmaps": ["good", "Bad_Name"]}
    )
    outcome = await reconciler.run(task(chart, namespace), cluster)
    assert not outcome.ok
    assert "Bad_Name" in outcome.error
    record = await records.read(cluster, "web", namespace)
    assert record is not None
    assert record.state == "applying"
    assert {e.name for e in record.entries} >= {"good", "Bad_Name"}


async def test_actions_run_around_and_instead_of_the_generic_steps(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    calls: list[str] = []

    class Action:
        async def pre_reconcile(self, ctx: ActionContext) -> None:
            calls.append("pre")

        async def reconcile(self, ctx: ActionContext) -> None:
            calls.append(f"reconcile {len(ctx.objects)} objects")
            await ctx.kube.apply(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "from-action", "namespace": ctx.task.namespace},
                }
            )

        async def post_reconcile(self, ctx: ActionContext) -> None:
            await asyncio.sleep(0)
            calls.append("post")

    chart = make_chart(tmp_path, "web", {"cms.yaml": CONFIGMAPS}, {"configmaps": ["a"]})
    custom = ComponentReconciler(
        HelmChartProvider(ChartCache(tmp_path / "c")), ActionRegistry({"web": Action()})
    )
    assert (await custom.run(task(chart, namespace), cluster)).ok
    assert calls == ["pre", "reconcile 1 objects", "post"]
    cm = KubeObject(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "from-action", "namespace": namespace},
        }
    )
    assert await cluster.get(cm) is not None
    default_cm = KubeObject(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": namespace}}
    )
    assert await cluster.get(default_cm) is None


async def test_a_namespace_the_component_creates_is_created_once_and_recorded(
    kube_cluster: KubeTarget, reconciler: ComponentReconciler, tmp_path: Path
) -> None:
    fresh = f"fresh-{uuid.uuid4().hex[:8]}"
    chart = make_chart(tmp_path, "web", {"cms.yaml": CONFIGMAPS}, {"configmaps": ["a"]})
    cluster, client = await recording_cluster(kube_cluster)
    async with cluster:
        try:
            outcome = await reconciler.run(task(chart, fresh, wait=False), cluster)
            assert outcome.ok, outcome.error
            namespace_writes = [
                sent
                for sent in client.take()
                if sent
                in (("PATCH", f"/api/v1/namespaces/{fresh}"), ("POST", "/api/v1/namespaces"))
            ]
            # created once, then applied by its creator so that a later apply changes nothing
            assert namespace_writes == [
                ("POST", "/api/v1/namespaces"),
                ("PATCH", f"/api/v1/namespaces/{fresh}"),
            ]
            assert ("", "Namespace", "", fresh) in outcome.changed
            record = await records.read(cluster, "web", fresh)
            assert record is not None
            assert {(e.kind, e.name) for e in record.entries} == {
                ("Namespace", fresh),
                ("ConfigMap", "a"),
            }
            # a full run applies the namespace again: nothing changes (the CLI's re-run of a
            # set reported it changed when the creation was the only write)
            again = await reconciler.run(task(chart, fresh, wait=False, force=True), cluster)
            assert again.ok, again.error
            assert again.changed == []
        finally:
            await reconciler.run(task(chart, fresh, type=TaskType.DELETE), cluster)


async def test_components_creating_their_namespace_together_leave_it_one_owner(
    kube_cluster: KubeTarget, reconciler: ComponentReconciler, tmp_path: Path
) -> None:
    """A mothership reconciliation runs a cluster's components at once; each used to see the
    shared namespace missing, create it with an apply and record it as its own. Their component
    labels then overwrote each other, so every later no-op run re-applied the namespace and
    rewrote the record for several of them, for ever."""
    fresh = f"fresh-{uuid.uuid4().hex[:8]}"
    names = [f"c{i}" for i in range(6)]
    charts = {
        name: make_chart(tmp_path, name, {"cms.yaml": CONFIGMAPS}, {"configmaps": [name]})
        for name in names
    }
    cluster, client = await recording_cluster(kube_cluster)
    async with cluster:
        try:

            async def run_all() -> list[tuple[str, str]]:
                """Every component at once; the requests they sent."""
                client.take()
                outcomes = await asyncio.gather(
                    *(
                        reconciler.run(
                            task(charts[name], fresh, component=name, wait=False), cluster
                        )
                        for name in names
                    )
                )
                assert all(outcome.ok for outcome in outcomes), [o.error for o in outcomes]
                return client.take()

            await run_all()
            found = [await records.read(cluster, name, fresh) for name in names]
            owners = [
                record.component
                for record in found
                if record and any(e.kind == "Namespace" for e in record.entries)
            ]
            assert len(owners) == 1, owners
            writes = [(m, path) for m, path in await run_all() if m in ("PATCH", "POST", "PUT")]
            assert writes == []  # the no-op run: nothing re-applied, no record rewritten
        finally:
            for name in names:
                await reconciler.run(
                    task(charts[name], fresh, component=name, type=TaskType.DELETE), cluster
                )
