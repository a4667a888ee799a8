"""Rendering a chart into the objects to apply: in-process with helm_python, or `helm template`.

Both renderers return the same list for the same chart, values and capabilities: `crds/` files
included (unless `include_crds=False`: a component whose CRDs the `CRDs` step applies need not
parse hundreds of KB of schema only to drop them), hooks, NOTES.txt and empty documents dropped,
ordered by `manifests.to_objects`. The SDK renderer is the default (no process per render); the
CLI renderer is the fallback and the reference the SDK renderer is tested against. Rendering
never contacts a cluster.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import yaml

from reconciler.charts.kubeversion import cluster_satisfies
from reconciler.charts.manifests import (
    Document,
    is_rendered_manifest,
    split_cli_output,
    split_documents,
    to_objects,
)
from reconciler.errors import ChartError
from reconciler.model.kube_object import KubeObject
from reconciler.paths import find_binary

if TYPE_CHECKING:
    from helm_python import Chart


@dataclass(frozen=True)
class Capabilities:
    """What `.Capabilities` reports to templates; without it each renderer uses its own default
    (helm_python 0.2.2: Kubernetes v1.36.0, the helm 4.1 CLI: v1.35.0)."""

    kube_version: str
    api_versions: tuple[str, ...] = ()
    """Added to Helm's built-in list of API versions, as `--api-versions` does."""


class Renderer(Protocol):
    async def render(
        self,
        chart_dir: Path,
        *,
        release: str,
        namespace: str,
        values: dict[str, Any],
        capabilities: Capabilities | None = None,
        include_crds: bool = True,
    ) -> list[KubeObject]:
        """Render `chart_dir` with `values` (already layered) into the objects to apply;
        `include_crds=False` leaves out the files of `crds/` (Helm's `--skip-crds`)."""
        ...


class SdkRenderer:
    """Renders in-process with helm_python, off the event loop, reusing loaded charts."""

    def __init__(self, *, max_cached_charts: int = 64) -> None:
        try:
            import helm_python
        except Exception as exc:  # the native library raises its own error types on import
            raise ChartError(f"helm_python cannot be loaded: {exc}") from exc
        self._helm = helm_python
        self._max_cached = max_cached_charts
        self._charts: OrderedDict[Path, tuple[str, Chart]] = OrderedDict()
        self._lock = threading.Lock()

    async def render(
        self,
        chart_dir: Path,
        *,
        release: str,
        namespace: str,
        values: dict[str, Any],
        capabilities: Capabilities | None = None,
        include_crds: bool = True,
    ) -> list[KubeObject]:
        return await asyncio.to_thread(
            self._render,
            chart_dir,
            release,
            namespace or "default",
            values,
            capabilities,
            include_crds,
        )

    def _render(
        self,
        chart_dir: Path,
        release: str,
        namespace: str,
        values: dict[str, Any],
        capabilities: Capabilities | None,
        include_crds: bool = True,
    ) -> list[KubeObject]:
        try:
            self._helm.validate_release_name(release)
        except self._helm.HelmError as exc:
            raise ChartError(f"chart {chart_dir}: release name {release!r}: {exc}") from exc
        chart, cached = self._chart(chart_dir)
        try:
            if not cached:  # only charts with subcharts or declared dependencies are not cached
                _check_dependencies(chart_dir, chart)
            if capabilities is not None:
                _check_kube_version(chart_dir, chart.metadata, capabilities.kube_version)
            try:
                files = _native_render(chart, values, release, namespace, capabilities)
            except self._helm.HelmError as exc:
                raise ChartError(f"chart {chart_dir}: {_one_line(str(exc))}") from exc
            # Read after rendering: the render drops subcharts whose condition is false.
            documents: list[Document] = []
            for crd in chart.crds if include_crds else ():
                documents += split_documents(crd["filename"], crd["data"])
        finally:
            if not cached:
                chart.close()
        for path, text in sorted(files.items()):
            if is_rendered_manifest(path):
                documents += split_documents(path, text)
        return to_objects(chart_dir, documents)

    def _chart(self, chart_dir: Path) -> tuple[Chart, bool]:
        """A loaded chart and whether it is shared from the cache (and must not be closed).

        helm_python 0.2.2 mutates a chart while rendering it (disabled subcharts are removed
        for good), so charts that declare dependencies are loaded afresh for every render.
        """
        key = chart_dir.resolve()
        fingerprint, reusable = _fingerprint(key)
        with self._lock:
            entry = self._charts.get(key)
            if entry is not None and entry[0] == fingerprint:
                self._charts.move_to_end(key)
                return entry[1], True
        try:
            chart = self._helm.Chart.load(key)
        except self._helm.HelmError as exc:
            raise ChartError(f"chart {chart_dir} cannot be loaded: {exc}") from exc
        if not reusable:
            return chart, False
        with self._lock:
            self._charts[key] = (fingerprint, chart)
            while len(self._charts) > self._max_cached:
                self._charts.popitem(last=False)  # closed by its finalizer once unused
        return chart, True


def _native_render(
    chart: Chart,
    values: dict[str, Any],
    release: str,
    namespace: str,
    capabilities: Capabilities | None,
) -> dict[str, str]:
    """helm_python's `Chart.render` with the capabilities its public signature leaves out."""
    from helm_python import _native

    options: dict[str, Any] = {"name": release, "namespace": namespace, "is_install": True}
    if capabilities is not None:
        options["kube_version"] = capabilities.kube_version
        options["api_versions"] = list(capabilities.api_versions)
    rendered = _native.call_string(
        "helm_render", chart._raw(), json.dumps(values), json.dumps(options)
    )
    files: dict[str, str] = json.loads(rendered)
    return files


def _check_dependencies(chart_dir: Path, chart: Chart) -> None:
    """Helm's `action.CheckDependencies`, which `helm upgrade --install` and `helm template`
    run before rendering: every dependency Chart.yaml (or requirements.yaml) declares must be in
    charts/, enabled or not. helm_python renders without the missing ones, which installed a
    chart without its subcharts (a forgotten `helm dependency build`)."""
    declared = chart.metadata.get("dependencies") or []
    loaded = {dependency.get("name") for dependency in chart.dependencies}
    missing = [
        d.get("name") for d in declared if isinstance(d, dict) and d.get("name") not in loaded
    ]
    if missing:
        raise ChartError(
            f"chart {chart_dir}: an error occurred while checking for chart dependencies. You may "
            "need to run `helm dependency build` to fetch missing dependencies: found in "
            f"Chart.yaml, but missing in charts/ directory: {', '.join(map(str, missing))}"
        )


def _check_kube_version(chart_dir: Path, metadata: dict[str, Any], kube_version: str) -> None:
    constraint = metadata.get("kubeVersion")
    if constraint and not cluster_satisfies(kube_version, str(constraint)):
        raise ChartError(
            f"chart {chart_dir} requires kubeVersion {constraint}, "
            f"which is incompatible with Kubernetes {kube_version}"
        )


def _fingerprint(chart_dir: Path) -> tuple[str, bool]:
    """A digest of the chart's file tree (paths, sizes, mtimes) and whether it may be reused."""
    digest = hashlib.sha256()
    reusable = True
    for folder, dirs, files in os.walk(chart_dir):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder, name)
            stat = path.stat()
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
            if name.endswith(".tgz") or (
                name in ("Chart.yaml", "requirements.yaml") and _declares_dependencies(path)
            ):
                reusable = False
    return digest.hexdigest(), reusable


def tree_fingerprint(chart_dir: Path) -> str:
    """A digest of the chart's file tree: changes whenever a file is added, removed or written."""
    return _fingerprint(chart_dir.resolve())[0]


def _declares_dependencies(path: Path) -> bool:
    text = path.read_text(encoding="utf-8", errors="replace")
    if "dependencies" not in text:
        return False
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return True
    return not isinstance(data, dict) or bool(data.get("dependencies"))


class CliRenderer:
    """Renders with `helm template` in a subprocess; slower, but Helm's own behaviour."""

    def __init__(self, helm: Path | None = None) -> None:
        self._helm = helm

    async def render(
        self,
        chart_dir: Path,
        *,
        release: str,
        namespace: str,
        values: dict[str, Any],
        capabilities: Capabilities | None = None,
        include_crds: bool = True,
    ) -> list[KubeObject]:
        helm = self._helm or find_binary("helm")
        if helm is None:
            raise ChartError(f"chart {chart_dir}: the helm CLI is not installed")
        with tempfile.TemporaryDirectory(prefix="reconciler-values-") as tmp:
            values_file = os.path.join(tmp, "values.json")
            await asyncio.to_thread(_write_json, values_file, values)
            args = [
                "template",
                release,
                str(chart_dir) if chart_dir.is_absolute() else f"./{chart_dir}",
                "--namespace",
                namespace or "default",
                "--values",
                values_file,
                *(["--include-crds"] if include_crds else []),  # `template` leaves crds/ out
            ]
            if capabilities is not None:
                args += ["--kube-version", capabilities.kube_version]
                if capabilities.api_versions:
                    args += ["--api-versions", ",".join(capabilities.api_versions)]
            returncode, out, err = await _run(helm, args)
        if returncode != 0:
            raise ChartError(f"chart {chart_dir}: {_helm_message(err)}")
        documents = split_cli_output(out.decode("utf-8"))
        return await asyncio.to_thread(to_objects, chart_dir, documents)


def _write_json(path: str, data: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as out:
        json.dump(data, out)


async def _run(program: Path, args: list[str]) -> tuple[int, bytes, bytes]:
    try:
        process = await asyncio.create_subprocess_exec(
            str(program),
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise ChartError(f"cannot run {program}: {exc}") from exc
    try:
        out, err = await process.communicate()
    except BaseException:
        if process.returncode is None:
            process.kill()
            await process.wait()
        raise
    return process.returncode or 0, out, err


def _helm_message(stderr: bytes) -> str:
    """Helm's error from its first `Error:` line on, on one line, without the `--debug` hint."""
    lines = stderr.decode("utf-8", errors="replace").splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("Error: ")), 0)
    kept = [line.strip() for line in lines[first:] if line.strip() and "--debug" not in line]
    return _one_line(" ".join(kept).removeprefix("Error: ")) or "helm template failed"


def _one_line(message: str) -> str:
    return " ".join(message.split())


def default_renderer() -> Renderer:
    """The in-process renderer, or `helm template` where helm_python cannot be loaded."""
    try:
        return SdkRenderer()
    except ChartError:
        return CliRenderer()
