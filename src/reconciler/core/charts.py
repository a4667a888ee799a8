"""Where the core gets a component's manifests from, by the task's source (`model/task.py`): a
Helm chart is fetched, its values layered and rendered; a raw manifest is fetched and split
(`charts/raw.py`); given objects are taken as they are.

The `CRDs` pseudo-component has no chart of its own: its manifests are the CRD files of the
workspace (its `ChartRef` is the workspace root) plus the `crds/` directory of every chart in
the component set (`task.crd_sources`), deduplicated by name.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
from pathlib import Path
from typing import Any, Protocol

from reconciler.charts.determinism import chart_varying_calls, varying_calls
from reconciler.charts.policy import SourcePolicy
from reconciler.charts.raw import RawManifests, objects_of
from reconciler.charts.render import Capabilities, Renderer, default_renderer, tree_fingerprint
from reconciler.charts.sources import ChartCache
from reconciler.charts.values import chart_values
from reconciler.charts.workspace import Workspace, chart_crd_names, crds_of
from reconciler.model.component import CRDS_COMPONENT
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import ChartRef, GivenObjects, RawManifest, Task
from reconciler.version import __version__


class ChartProvider(Protocol):
    async def render(self, task: Task, capabilities: Capabilities | None) -> list[KubeObject]:
        """The manifests of `task`'s component, rendered for a cluster with `capabilities`."""
        ...

    async def digest(self, task: Task, cluster: str) -> str:
        """Changes whenever `render` may return something else ("" = unknown: always render);
        `cluster` is a fingerprint of the cluster's capabilities (`RestMapper.fingerprint`)."""
        ...

    async def may_vary(self, task: Task) -> bool:
        """Whether two renders of `task` with the same inputs may differ (random values, keys,
        certificates, the time): only then can a second render find generated paths (see
        `core.generated`). True when unsure."""
        ...


MAX_CACHED_VARYING = 1024
"""Charts whose `may_vary` answer is kept (a few bytes each; cleared when full)."""


class HelmChartProvider:
    """The chart provider of every driver: Helm charts through `cache` and `renderer`, raw
    manifests through `raw`, given objects as they are."""

    def __init__(
        self,
        cache: ChartCache,
        renderer: Renderer | None = None,
        raw: RawManifests | None = None,
        policy: SourcePolicy | None = None,
    ) -> None:
        self.cache = cache
        self.renderer = renderer or default_renderer()
        self.policy = policy or SourcePolicy()
        """What chart and raw-manifest links may be fetched (`charts/policy.py`)."""
        self.raw = raw or RawManifests(policy=self.policy)
        self._varying: dict[str, bool] = {}
        """`may_vary` of a chart by its file-tree fingerprint: reading every file once per
        chart version, not once per release of it."""

    async def render(self, task: Task, capabilities: Capabilities | None) -> list[KubeObject]:
        match task.source:
            case RawManifest(link):
                return objects_of(link, await self.raw.text(link))
            case GivenObjects(objects):
                return [KubeObject(copy.deepcopy(obj.raw)) for obj in objects]
            case ChartRef(link):
                return await self._render_chart(task, link, capabilities)

    async def _render_chart(
        self, task: Task, link: str, capabilities: Capabilities | None
    ) -> list[KubeObject]:
        if task.component == CRDS_COMPONENT:
            return await self._crds(task, link)
        chart_dir = await self.cache.fetch(link, self.policy)
        values = chart_values(chart_dir, profile=task.profile, overrides=task.configuration)
        objects = await self.renderer.render(
            chart_dir,
            release=task.component,
            namespace=task.namespace,
            values=values,
            capabilities=capabilities,
            include_crds=task.include_crds,
        )
        if task.include_crds or not any(obj.is_crd for obj in objects):
            return objects
        # a template that renders a CRD of crds/ again: the CRDs step owns that one
        owned_elsewhere = await asyncio.to_thread(chart_crd_names, chart_dir)
        return [obj for obj in objects if not (obj.is_crd and obj.name in owned_elsewhere)]

    async def digest(self, task: Task, cluster: str) -> str:
        """Of a chart: its files (by path, size and mtime), values, task fields that reach the
        render or the transform, the cluster's capabilities (fingerprint) and this program's
        version. Of a raw manifest: its text; of given objects: the objects (with the same task
        fields, cluster and version).

        Not the capabilities for the `CRDs` pseudo-component: its files are not templates, so
        nothing it renders depends on them. With them, its record held the digest of the
        cluster before its own CRDs existed, and the first re-run after every install (or
        CRD change) missed the fast path and applied every CRD again."""
        same: list[Any] = [task.component, task.namespace, task.version, cluster]
        if task.stamp:  # only then: digests of tasks without one stay as they were
            same.append(task.stamp.key())
        match task.source:
            case RawManifest(link):
                text = await self.raw.text(link)
                return hashlib.sha256(json.dumps([__version__, text, *same]).encode()).hexdigest()
            case GivenObjects(objects):
                inputs = [__version__, [obj.raw for obj in objects], *same]
                return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
            case ChartRef(link):
                return await self._chart_digest(task, link, cluster)

    async def _chart_digest(self, task: Task, link: str, cluster: str) -> str:
        if task.component == CRDS_COMPONENT:
            roots = [Workspace(Path(link)).crds_dir] if link else []
            sources = list(task.crd_sources)
            cluster = ""
        else:
            roots, sources = [], [link]
        roots += await asyncio.gather(
            *(self.cache.fetch(source, self.policy) for source in sources)
        )
        trees = await asyncio.to_thread(lambda: [tree_fingerprint(r) for r in roots])
        inputs: list[Any] = [
            __version__,
            trees,
            task.component,
            task.namespace,
            task.version,
            task.profile,
            task.configuration,
            task.include_crds,
            cluster,
        ]
        if task.stamp:
            inputs.append(task.stamp.key())
        text = json.dumps(inputs, sort_keys=True, default=str, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    async def may_vary(self, task: Task) -> bool:
        """The chart's files or the task's values (which templates may `tpl`) call a function
        whose result changes between renders; the `CRDs` pseudo-component's files are not
        templates, and a raw manifest or given objects are applied as written."""
        if not isinstance(task.source, ChartRef) or task.component == CRDS_COMPONENT:
            return False
        if varying_calls(json.dumps(task.configuration, default=str)):
            return True
        chart_dir = await self.cache.fetch(task.source.link, self.policy)
        return await asyncio.to_thread(self._chart_may_vary, chart_dir)

    def _chart_may_vary(self, chart_dir: Path) -> bool:
        fingerprint = tree_fingerprint(chart_dir)
        known = self._varying.get(fingerprint)
        if known is None:
            known = bool(chart_varying_calls(chart_dir))
            if len(self._varying) >= MAX_CACHED_VARYING:
                self._varying.clear()
            self._varying[fingerprint] = known
        return known

    async def _crds(self, task: Task, workspace: str) -> list[KubeObject]:
        files = Workspace(Path(workspace)).crd_files() if workspace else []
        return await crds_of(files, task.crd_sources, self.cache)
