"""The no-op fast path against the real apiserver: unchanged inputs cost metadata reads only,
drift re-applies exactly the drifted object, and a full run stays available."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from reconciler.charts.render import Capabilities
from reconciler.charts.sources import ChartCache
from reconciler.core.charts import HelmChartProvider
from reconciler.core.runner import ComponentReconciler
from reconciler.kube import records
from reconciler.kube.cluster import Cluster
from reconciler.kube.live import LiveIndex
from reconciler.model.component import CRDS_COMPONENT
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import ChartRef, Task
from tests.conftest import KubeTarget
from tests.helpers.charts import CONFIGMAPS, DEPLOYMENT, make_chart
from tests.helpers.counting import RecordingKubeClient, recording_cluster
from tests.helpers.crds import gadget_crd


class CountingProvider(HelmChartProvider):
    renders = 0

    async def render(self, task: Task, capabilities: Capabilities | None) -> list[KubeObject]:
        self.renders += 1
        return await super().render(task, capabilities)


class Bench(NamedTuple):
    """A cluster connection that records its requests, and a reconciler that counts renders."""

    cluster: Cluster
    client: RecordingKubeClient
    provider: CountingProvider
    reconciler: ComponentReconciler


@pytest.fixture
async def bench(kube_cluster: KubeTarget, tmp_path: Path) -> AsyncIterator[Bench]:
    cluster, client = await recording_cluster(kube_cluster)
    provider = CountingProvider(ChartCache(tmp_path / "cache"))
    async with cluster:
        yield Bench(cluster, client, provider, ComponentReconciler(provider))


def web(chart: Path, namespace: str, **changes: Any) -> Task:
    base = Task(
        component="web",
        namespace=namespace,
        version="1",
        source=ChartRef(str(chart)),
        timeout=60,
        wait=False,
    )
    return Task(**{**base.__dict__, **changes})


def configmaps_chart(root: Path, names: list[str]) -> Path:
    return make_chart(root, "web", {"cms.yaml": CONFIGMAPS}, {"configmaps": names})


def patches(sent: list[tuple[str, str]]) -> list[str]:
    return [path.rsplit("/", 2)[-1] for method, path in sent if method == "PATCH"]


async def versions(cluster: Cluster, namespace: str) -> dict[str, str]:
    info = await cluster.mapper.resolve("v1", "ConfigMap")
    return {
        o.name: o.metadata["resourceVersion"] for o in await cluster.list(info, namespace=namespace)
    }


async def test_unchanged_inputs_cost_no_render_no_apply_and_one_list_per_kind(
    bench: Bench, namespace: str, tmp_path: Path
) -> None:
    cluster, client, provider, reconciler = bench
    chart = make_chart(
        tmp_path,
        "web",
        {"deploy.yaml": DEPLOYMENT, "cms.yaml": CONFIGMAPS},
        {"configmaps": ["a", "b", "c"]},
    )
    assert (await reconciler.run(web(chart, namespace), cluster)).ok
    client.take()
    outcome = await reconciler.run(web(chart, namespace), cluster)
    assert outcome.ok, outcome.error
    assert (outcome.checked, outcome.applied, outcome.changed) == (4, 0, [])
    assert provider.renders == 1
    sent = client.take()
    assert [method for method, _ in sent] == ["GET"] * 3, sent  # record, ConfigMaps, Deployments


async def test_editing_one_object_reapplies_exactly_that_object(
    bench: Bench, namespace: str, tmp_path: Path
) -> None:
    cluster, client, provider, reconciler = bench
    chart = configmaps_chart(tmp_path, ["a", "b", "c"])
    assert (await reconciler.run(web(chart, namespace), cluster)).ok
    await cluster.client.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/configmaps/b",
        body={"data": {"greeting": "tampered"}},
        content_type="application/merge-patch+json",
    )
    before = await versions(cluster, namespace)
    client.take()
    outcome = await ComponentReconciler(provider).run(web(chart, namespace), cluster)  # no cache
    assert outcome.ok, outcome.error
    assert [key.name for key in outcome.changed] == ["b"]
    assert patches(client.take()) == ["b", records.configmap_name("web")]
    after = await versions(cluster, namespace)
    assert {n: after[n] for n in ("a", "c")} == {n: before[n] for n in ("a", "c")}
    assert after["b"] != before["b"]
    live = await cluster.get(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": namespace}}
    )
    assert live is not None
    assert live.raw["data"]["greeting"] == "hello"
    again = await reconciler.run(web(chart, namespace), cluster)
    assert (again.applied, patches(client.take())) == (0, [])


async def test_fields_nobody_applied_are_not_drift(
    bench: Bench, namespace: str, tmp_path: Path
) -> None:
    cluster, client, _, reconciler = bench
    chart = configmaps_chart(tmp_path, ["a"])
    assert (await reconciler.run(web(chart, namespace), cluster)).ok
    await cluster.client.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/configmaps/a",
        body={"metadata": {"annotations": {"someone/else": "x"}}},
        content_type="application/merge-patch+json",
    )
    client.take()
    outcome = await reconciler.run(web(chart, namespace), cluster)
    assert outcome.ok
    assert outcome.applied == 0
    assert patches(client.take()) == []


async def test_a_deleted_object_is_recreated(bench: Bench, namespace: str, tmp_path: Path) -> None:
    cluster, client, _, reconciler = bench
    chart = configmaps_chart(tmp_path, ["a", "b"])
    assert (await reconciler.run(web(chart, namespace), cluster)).ok
    await cluster.delete(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": namespace}}
    )
    client.take()
    outcome = await reconciler.run(web(chart, namespace), cluster)
    assert outcome.ok
    assert [key.name for key in outcome.changed] == ["a"]
    assert patches(client.take()) == ["a", records.configmap_name("web")]


async def test_force_and_age_and_new_inputs_apply_everything(
    bench: Bench, namespace: str, tmp_path: Path
) -> None:
    cluster, client, provider, reconciler = bench
    chart = configmaps_chart(tmp_path, ["a", "b"])
    assert (await reconciler.run(web(chart, namespace), cluster)).ok
    client.take()
    forced = await reconciler.run(web(chart, namespace, force=True), cluster)
    # one render each: the chart calls no varying function, so there are no generated paths
    # to find with a second one (see test_generated for a chart that has some)
    assert (forced.applied, forced.changed, provider.renders) == (2, [], 2)
    assert sorted(patches(client.take()))[:2] == ["a", "b"]
    aged = await ComponentReconciler(provider, full_after=0).run(web(chart, namespace), cluster)
    assert (aged.applied, provider.renders) == (2, 3)
    changed = await reconciler.run(web(chart, namespace, configuration={"greeting": "hi"}), cluster)
    assert (changed.applied, len(changed.changed), provider.renders) == (2, 2, 4)


@pytest.mark.usefixtures("kubelet")
async def test_ready_workloads_need_no_wait_and_status_writes_are_not_drift(
    bench: Bench, namespace: str, tmp_path: Path
) -> None:
    cluster, client, _, reconciler = bench
    chart = make_chart(tmp_path, "web", {"deploy.yaml": DEPLOYMENT}, {"replicas": 1})
    assert (await reconciler.run(web(chart, namespace, wait=True), cluster)).ok
    client.take()
    outcome = await reconciler.run(web(chart, namespace, wait=True), cluster)
    assert outcome.ok, outcome.error
    assert outcome.applied == 0
    assert [p for p in patches(client.take()) if p != records.configmap_name("web")] == []


async def test_a_shared_index_reads_every_component_of_a_run_with_one_list_per_kind(
    bench: Bench, tmp_path: Path
) -> None:
    cluster, client, _, reconciler = bench
    chart = configmaps_chart(tmp_path, ["a", "b"])
    names = [f"steady-shared-{i}" for i in range(4)]
    try:
        first = LiveIndex()
        assert all(
            o.ok
            for o in await asyncio.gather(
                *(reconciler.run(web(chart, n), cluster, live=first) for n in names)
            )
        )
        client.take()
        index = LiveIndex()
        outcomes = await asyncio.gather(
            *(reconciler.run(web(chart, n), cluster, live=index) for n in names)
        )
        assert all(o.ok and o.checked == 3 and o.applied == 0 for o in outcomes)
        sent = client.take()
        # the records, ConfigMaps, Namespaces (each release owns its namespace)
        assert len(sent) == 3, sent
    finally:
        for name in names:
            await cluster.delete(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            )


async def test_each_run_hands_back_the_record_it_left(
    bench: Bench, namespace: str, tmp_path: Path
) -> None:
    """Full run, no-op and drift repair: the outcome carries the record as written, so a driver
    (the operator's Manifest controller) need not read it again."""
    cluster, _, _, reconciler = bench
    chart = configmaps_chart(tmp_path, ["a", "b"])

    async def matches_the_cluster(run_outcome: Any) -> None:
        assert run_outcome.ok, run_outcome.error
        stored = await records.read(cluster, "web", namespace)
        assert stored is not None
        assert run_outcome.record is not None

        def essence(record: records.Record) -> tuple[Any, ...]:
            entries = sorted((repr(e.key), repr(asdict(e))) for e in record.entries)
            return (record.state, record.digest, record.version, entries)

        assert essence(run_outcome.record) == essence(stored)

    await matches_the_cluster(await reconciler.run(web(chart, namespace), cluster))
    await matches_the_cluster(await reconciler.run(web(chart, namespace), cluster))
    await cluster.client.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/configmaps/a",
        body={"data": {"greeting": "tampered"}},
        content_type="application/merge-patch+json",
    )
    await matches_the_cluster(await reconciler.run(web(chart, namespace), cluster))


async def test_the_crds_step_rerun_right_after_installing_its_crds_takes_the_fast_path(
    bench: Bench, namespace: str, tmp_path: Path
) -> None:
    """The CRDs step renders files, not templates: the capabilities its own CRDs changed are
    no input of its render, so the next run has nothing to render or apply."""
    crds = tmp_path / "workspace" / "installation" / "resources" / "crds"
    crds.mkdir(parents=True)
    group = f"{namespace}.example.io"
    (crds / "gadgets.yaml").write_text(yaml.safe_dump(gadget_crd(group)))
    task = Task(
        component=CRDS_COMPONENT,
        namespace=namespace,
        version="1",
        source=ChartRef(str(tmp_path / "workspace")),
        wait=False,
    )
    try:
        first = await bench.reconciler.run(task, bench.cluster)
        assert first.ok, first.error
        assert first.applied == 1
        again = await ComponentReconciler(bench.provider).run(task, bench.cluster)  # next run
        assert again.ok, again.error
        assert (again.checked, again.applied) == (1, 0)
        assert bench.provider.renders == 1
    finally:
        await bench.cluster.delete(KubeObject(gadget_crd(group)))
