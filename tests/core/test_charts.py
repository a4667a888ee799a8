"""The chart provider: what a component's render holds when the `CRDs` step owns its CRDs, and
how it serves each kind of source a task may carry."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from reconciler.charts.sources import ChartCache
from reconciler.core.charts import HelmChartProvider
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import ChartRef, GivenObjects, RawManifest, Task
from tests.charts.support import FIXTURE_CHARTS
from tests.helpers.crds import minimal_crd


def _task(chart: Path, *, include_crds: bool) -> Task:
    return Task(
        component="crds",
        namespace="ns",
        version="1.0.0",
        source=ChartRef(str(chart)),
        include_crds=include_crds,
    )


async def test_a_component_whose_crds_the_crds_step_applies_renders_only_other_crds(
    tmp_path: Path,
) -> None:
    chart = tmp_path / "chart"
    shutil.copytree(FIXTURE_CHARTS / "crds", chart)
    # one template renders a CRD of crds/ again (the CRDs step owns it), one a CRD of its own
    (chart / "templates" / "crd.yaml").write_text(
        yaml.safe_dump_all(
            [minimal_crd("example.com", "Widget"), minimal_crd("example.com", "Cog")]
        )
    )
    provider = HelmChartProvider(ChartCache(tmp_path / "cache"))

    def crds(objects: list[KubeObject]) -> list[str]:
        return sorted(obj.name for obj in objects if obj.is_crd)

    alone = await provider.render(_task(chart, include_crds=True), None)
    assert crds(alone) == [
        "cogs.example.com",
        "gadgets.example.com",
        "sprockets.example.com",
        "widgets.example.com",  # from crds/
        "widgets.example.com",  # from the template
    ]
    with_step = await provider.render(_task(chart, include_crds=False), None)
    assert crds(with_step) == ["cogs.example.com"]
    # everything else is the same render
    assert [o.key for o in with_step if not o.is_crd] == [o.key for o in alone if not o.is_crd]


CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {}}


async def test_a_raw_manifest_is_read_as_written_and_never_varies(tmp_path: Path) -> None:
    manifest = tmp_path / "module.yaml"
    manifest.write_text(yaml.safe_dump(CONFIG_MAP))
    provider = HelmChartProvider(ChartCache(tmp_path / "cache"))
    task = Task("m", "ns", "1", RawManifest(f"file://{manifest}"))
    assert [obj.raw for obj in await provider.render(task, None)] == [CONFIG_MAP]
    assert not await provider.may_vary(task)
    digest = await provider.digest(task, "cluster")
    assert digest == await provider.digest(task, "cluster")
    manifest.write_text(yaml.safe_dump({**CONFIG_MAP, "data": {"k": "v"}}))
    assert await provider.digest(task, "cluster") != digest


async def test_given_objects_are_rendered_as_copies_of_themselves(tmp_path: Path) -> None:
    provider = HelmChartProvider(ChartCache(tmp_path / "cache"))
    given = KubeObject(yaml.safe_load(yaml.safe_dump(CONFIG_MAP)))
    task = Task("sync-a", "ns", "1", GivenObjects((given,)))
    rendered = await provider.render(task, None)
    assert [obj.raw for obj in rendered] == [CONFIG_MAP]
    rendered[0].raw["data"]["changed"] = "by the transform"
    assert given.raw == CONFIG_MAP  # the next run renders the same again
    assert not await provider.may_vary(task)
    assert await provider.digest(task, "c") != await provider.digest(task, "other cluster")
