"""The chart provider: what a component's render holds when the `CRDs` step owns its CRDs."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from reconciler.charts.sources import ChartCache
from reconciler.core.charts import HelmChartProvider
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import Task
from tests.charts.support import FIXTURE_CHARTS
from tests.helpers.crds import minimal_crd


def _task(chart: Path, *, include_crds: bool) -> Task:
    return Task(
        component="crds",
        namespace="ns",
        version="1.0.0",
        chart=str(chart),
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
