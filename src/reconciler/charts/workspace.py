"""The Kyma source-tree layout: where a version keeps its component set, charts and CRDs.

`installation/resources/components.yaml` lists the components, `resources/<name>` holds each
chart unless the component names another source, and `installation/resources/crds` holds CRDs
that belong to no chart. `collect_crds` gathers every CRD of a version for the `CRDs`
pseudo-component; reading files is all this module does (no rendering, no cluster).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from pydantic import ValidationError

from reconciler.charts import yamlio
from reconciler.charts.sources import ChartCache
from reconciler.errors import ChartError
from reconciler.model.component import ComponentSet, ComponentSetError, ComponentSpec
from reconciler.model.kube_object import KubeObject

REMOTE_SCHEMES = ("http", "https", "oci", "file")
CRD_EXTENSIONS = (".yaml", ".yml", ".json")  # what Helm reads from a chart's crds/


class Workspace:
    """A checked-out source tree of one version."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def components_file(self) -> Path:
        return self.root / "installation" / "resources" / "components.yaml"

    @property
    def crds_dir(self) -> Path:
        return self.root / "installation" / "resources" / "crds"

    def component_set(self, path: Path | None = None) -> ComponentSet:
        """Read and validate the component set (default: the workspace's components.yaml)."""
        path = path or self.components_file
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ComponentSetError(
                f"cannot read component set {path}: {exc.strerror or exc}"
            ) from exc
        try:
            data = yamlio.load(text)
        except yaml.YAMLError as exc:
            raise ComponentSetError(
                f"invalid YAML in component set {path}{yamlio.where(exc)}"
            ) from exc
        try:
            return ComponentSet.model_validate(data or {})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in error['loc']) or 'file'}: {error['msg']}"
                for error in exc.errors()
            )
            raise ComponentSetError(f"invalid component set {path}: {problems}") from exc

    def chart_source(self, spec: ComponentSpec) -> str:
        """The chart source of a component: its `url` (relative to the root) or resources/<name>."""
        if not spec.url:
            return str(self.root / "resources" / spec.name)
        if urlsplit(spec.url).scheme in REMOTE_SCHEMES or Path(spec.url).is_absolute():
            return spec.url
        return str(self.root / spec.url)

    def check_local_charts(self, component_set: ComponentSet) -> None:
        """Refuse a set naming a local chart that is not there, before any cluster is asked
        (else the first step to read the charts, the `CRDs` step, failed for it)."""
        missing = [
            f"{spec.name} ({source})"
            for spec in component_set.all()
            if urlsplit(source := self.chart_source(spec)).scheme not in REMOTE_SCHEMES
            and not Path(source).is_dir()
            and not Path(source).is_file()  # a packaged chart (.tgz)
        ]
        if missing:
            raise ChartError(
                f"no chart for component{'s' if len(missing) > 1 else ''} {', '.join(missing)}: "
                "put it under resources/<name>/ of the workspace, or give its url: in the "
                "component set"
            )

    def crd_files(self) -> list[Path]:
        """The CRD files that belong to no chart, sorted."""
        return sorted(self.crds_dir.glob("**/*.yaml"))


async def collect_crds(
    workspace: Workspace, component_set: ComponentSet, cache: ChartCache
) -> list[KubeObject]:
    """Every CRD of the version: workspace CRD files, then each component chart's crds/."""
    sources = [workspace.chart_source(spec) for spec in component_set.all()]
    return await crds_of(workspace.crd_files(), sources, cache)


async def crds_of(
    crd_files: Sequence[Path], chart_sources: Sequence[str], cache: ChartCache
) -> list[KubeObject]:
    """The CRDs in `crd_files` and in the crds/ of each chart source, deduplicated by name.

    A later definition of a name must be identical. Non-CRD documents in a chart's crds/ are left
    to that chart's own rendering; in standalone CRD files they are an error, since nothing else
    would apply them. Subcharts packed as .tgz are not looked into.
    """
    chart_dirs = await asyncio.gather(*(cache.fetch(source) for source in chart_sources))
    return await asyncio.to_thread(_collect, list(crd_files), list(chart_dirs))


def _collect(crd_files: list[Path], chart_dirs: list[Path]) -> list[KubeObject]:
    found: dict[str, tuple[Path, KubeObject]] = {}

    def add(path: Path, crd: KubeObject) -> None:
        first = found.setdefault(crd.name, (path, crd))
        if first[1].raw != crd.raw:
            raise ChartError(f"CRD {crd.name} is defined differently in {first[0]} and in {path}")

    for path in crd_files:
        for obj in _objects(path):
            if not obj.is_crd:
                raise ChartError(
                    f"CRD file {path} holds {obj.kind} {obj.name!r}, not a CustomResourceDefinition"
                )
            add(path, obj)
    for chart_dir in chart_dirs:
        for path in chart_crd_files(chart_dir):
            for obj in _objects(path):
                if obj.is_crd:
                    add(path, obj)
    return [crd for _, crd in found.values()]


def chart_crd_names(chart_dir: Path) -> set[str]:
    """Names of the CRDs a chart ships in crds/ (its own and its unpacked subcharts')."""
    return {obj.name for path in chart_crd_files(chart_dir) for obj in _objects(path) if obj.is_crd}


def chart_crd_files(chart_dir: Path) -> list[Path]:
    """The files of a chart's crds/ directory and of its unpacked subcharts', as Helm reads them."""
    return list(_chart_crd_files(chart_dir))


def _chart_crd_files(chart_dir: Path) -> Iterator[Path]:
    crds = chart_dir / "crds"
    if crds.is_dir():
        yield from sorted(p for p in crds.rglob("*") if p.suffix in CRD_EXTENSIONS and p.is_file())
    subcharts = chart_dir / "charts"
    if subcharts.is_dir():
        for sub in sorted(subcharts.iterdir()):
            if (sub / "Chart.yaml").is_file():
                yield from _chart_crd_files(sub)


def _objects(path: Path) -> list[KubeObject]:
    try:
        documents = yamlio.load_all(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ChartError(f"invalid YAML in CRD file {path}{yamlio.where(exc)}") from exc
    objects: list[KubeObject] = []
    for document in documents:
        if document is None:
            continue
        if not isinstance(document, dict) or not document.get("kind"):
            raise ChartError(f"CRD file {path} holds a document that is not a Kubernetes object")
        objects.append(KubeObject(document))
    return objects
