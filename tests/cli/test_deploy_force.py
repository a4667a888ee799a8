"""`reconciler deploy` of an unchanged set is a no-op; `--force` applies everything again;
`--regenerate` records a new regenerate token each time."""

from __future__ import annotations

from pathlib import Path

from reconciler.kube import records
from reconciler.kube.cluster import Cluster
from tests.cli.test_deploy_cli import invoke_async, summary, workspace
from tests.conftest import ClusterFactory
from tests.helpers.charts import CONFIGMAPS


async def test_unchanged_deploy_applies_nothing_and_force_applies_everything(
    cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    # a cluster of its own: CRDs other tests leave behind (deleted asynchronously) change the
    # shared cluster's capabilities between two deploys, and with them every component's digest
    kube_cluster = await cluster_factory()
    ws = workspace(
        tmp_path / "ws",
        {"forced": {"templates": {"cms.yaml": CONFIGMAPS}, "values": {"configmaps": ["x", "z"]}}},
    )
    args = ("--kubeconfig", str(kube_cluster.kubeconfig), "-w", str(ws), "-o", "json")
    first = await invoke_async("deploy", *args)
    assert first.exit_code == 0, first.output
    again = summary(await invoke_async("deploy", *args))["forced"]
    assert (again["state"], again["applied"], again["changed"]) == ("done", 0, [])
    forced = summary(await invoke_async("deploy", *args, "--force"))["forced"]
    assert (forced["state"], forced["applied"], forced["changed"]) == ("done", 2, [])
    tokens = set()
    for _ in range(2):
        assert (await invoke_async("deploy", *args, "--regenerate")).exit_code == 0
        async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
            record = await records.read(cluster, "forced", "cli-test")
        assert record is not None
        tokens.add(record.regenerated)
    assert len(tokens) == 2
    assert "" not in tokens
