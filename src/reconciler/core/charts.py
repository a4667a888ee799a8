"""Where the core gets a component's manifests from: fetch the chart, layer values, render.

The `CRDs` pseudo-component has no chart of its own: its manifests are the CRD files of the
workspace (`task.chart` is that directory) plus the `crds/` directory of every chart in the
component set (`task.crd_sources`), deduplicated by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import yaml

from reconciler.charts.render import Capabilities, Renderer, default_renderer
from reconciler.charts.sources import ChartCache
from reconciler.charts.values import chart_values
from reconciler.errors import ChartError
from reconciler.model.component import CRDS_COMPONENT
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import Task


class ChartProvider(Protocol):
    async def render(self, task: Task, capabilities: Capabilities | None) -> list[KubeObject]:
        """The manifests of `task`'s component, rendered for a cluster with `capabilities`."""
        ...


def _crd_documents(directory: Path) -> list[KubeObject]:
    found: list[KubeObject] = []
    for path in sorted([*directory.rglob("*.yaml"), *directory.rglob("*.yml")]):
        try:
            documents = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError as exc:
            raise ChartError(f"invalid YAML in CRD file {path}: {exc}") from None
        found.extend(KubeObject(doc) for doc in documents if isinstance(doc, dict))
    return [obj for obj in found if obj.is_crd]


class HelmChartProvider:
    def __init__(self, cache: ChartCache, renderer: Renderer | None = None) -> None:
        self.cache = cache
        self.renderer = renderer or default_renderer()

    async def render(self, task: Task, capabilities: Capabilities | None) -> list[KubeObject]:
        if task.component == CRDS_COMPONENT:
            return await self._crds(task)
        chart_dir = await self.cache.fetch(task.chart)
        values = chart_values(chart_dir, profile=task.profile, overrides=task.configuration)
        return await self.renderer.render(
            chart_dir,
            release=task.component,
            namespace=task.namespace,
            values=values,
            capabilities=capabilities,
        )

    async def _crds(self, task: Task) -> list[KubeObject]:
        directories = [Path(task.chart)] if task.chart else []
        for source in task.crd_sources:
            directories.append((await self.cache.fetch(source)) / "crds")
        by_name: dict[str, KubeObject] = {}
        for directory in directories:
            if not directory.is_dir():
                continue
            for crd in _crd_documents(directory):
                known = by_name.setdefault(crd.name, crd)
                if known.raw != crd.raw:
                    raise ChartError(f"CRD {crd.name} is defined differently in {directory}")
        return list(by_name.values())
