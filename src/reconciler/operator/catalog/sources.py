"""Where a module's objects come from: a Helm chart through the core's chart provider, or a raw
manifest (`rawManifest`: one YAML document stream at a local path, an http(s) URL, what most
lifecycle-manager module templates carry, or an OCI artifact's layer, see `layers.py`), split and
checked exactly as Helm's rendered output.

The Task only carries the link; the Manifest controller marks which links are raw manifests
(`mark_raw`) before the core runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import httpx

from reconciler.charts.manifests import split_documents, to_objects
from reconciler.charts.render import Capabilities
from reconciler.charts.sources import redact
from reconciler.core.charts import ChartProvider
from reconciler.errors import ChartError
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import Task
from reconciler.operator.catalog.layers import RawManifestLayers
from reconciler.version import __version__

MAX_MANIFEST_BYTES = 32 * 1024 * 1024


class ModuleSources:
    def __init__(
        self,
        charts: ChartProvider,
        *,
        timeout: float = 60.0,
        layers: RawManifestLayers | None = None,
    ) -> None:
        self.charts = charts
        self.timeout = timeout
        self.layers = layers or RawManifestLayers()
        self._raw: set[str] = set()

    def mark_raw(self, link: str) -> None:
        self._raw.add(link)

    async def _text(self, link: str) -> str:
        if link.startswith("oci://"):
            return await self.layers.text(link)
        if link.startswith(("http://", "https://")):
            async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=True) as client:
                try:
                    response = await client.get(link)
                except httpx.HTTPError as exc:
                    raise ChartError(f"raw manifest {redact(link)}: {type(exc).__name__}") from None
            if response.status_code != 200:
                raise ChartError(f"raw manifest {redact(link)}: HTTP {response.status_code}")
            if len(response.content) > MAX_MANIFEST_BYTES:
                raise ChartError(
                    f"raw manifest {redact(link)}: larger than {MAX_MANIFEST_BYTES} bytes"
                )
            return response.text
        path = Path(link.removeprefix("file://"))
        try:
            return await asyncio.to_thread(path.read_text, "utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ChartError(
                f"raw manifest {path}: cannot be read ({type(exc).__name__})"
            ) from None

    async def render(self, task: Task, capabilities: Capabilities | None) -> list[KubeObject]:
        if task.chart not in self._raw:
            return await self.charts.render(task, capabilities)
        text = await self._text(task.chart)
        return to_objects(Path(redact(task.chart)), split_documents(redact(task.chart), text))

    async def digest(self, task: Task, cluster: str) -> str:
        if task.chart not in self._raw:
            return await self.charts.digest(task, cluster)
        text = await self._text(task.chart)
        inputs = [__version__, text, task.component, task.namespace, task.version, cluster]
        return hashlib.sha256(json.dumps(inputs).encode()).hexdigest()

    async def may_vary(self, task: Task) -> bool:
        """A raw manifest is applied as written: it renders the same every time."""
        if task.chart not in self._raw:
            return await self.charts.may_vary(task)
        return False


def install_link(name: str, source: dict[str, Any]) -> tuple[str | None, bool]:
    """The link a Manifest's `spec.install` names, and whether it is a raw manifest.

    Ours: `{"type": "helm-chart" | "raw-manifest", "url": link}`. lifecycle-manager's ImageSpec
    `{"type": "oci-ref", "repo", "name", "ref"}` names a raw-manifest layer `repo/name@ref` (only
    raw rendering is supported for those layers)."""
    if source.get("type") == "oci-ref" and source.get("repo") and source.get("ref"):
        repo = str(source["repo"]).removeprefix("oci://").strip("/")
        component = str(source.get("name") or "").strip("/")
        ref = str(source["ref"])
        path = f"{repo}/{component}" if component else repo
        return f"oci://{path}{'@' if ref.startswith('sha256:') else ':'}{ref}", True
    url = source.get("url") or source.get("repo")
    raw = source.get("type") == "raw-manifest" or name == "rawManifest"
    return (str(url) if url else None), raw


def descriptor_source(descriptor: dict[str, Any]) -> tuple[str, str] | None:
    """`("rawManifest" | "chart", link)` from a ModuleTemplate's OCM component descriptor.

    The descriptor's `raw-manifest` resource (or a `helmChart` resource) with `ociArtifact` /
    `ociRegistry` access names its artifact by `imageReference`; with `localBlob` access the
    raw-manifest layer sits in the component's own repository,
    `<baseUrl>/component-descriptors/<name>`, as OCM's `urlPath` name mapping stores it."""
    component = descriptor.get("component")
    if not isinstance(component, dict):
        return None
    for resource in component.get("resources") or []:
        if not isinstance(resource, dict):
            continue
        if resource.get("name") == "raw-manifest":
            install = "rawManifest"
        elif resource.get("type") == "helmChart":
            install = "chart"
        else:
            continue
        access = resource.get("access") or {}
        kind = str(access.get("type", "")).partition("/")[0]
        if kind in ("ociArtifact", "ociRegistry") and access.get("imageReference"):
            return install, f"oci://{str(access['imageReference']).removeprefix('oci://')}"
        if kind == "localBlob" and install == "rawManifest" and access.get("localReference"):
            contexts = component.get("repositoryContexts") or [{}]
            base = str(contexts[-1].get("baseUrl", "")).removeprefix("oci://").strip("/")
            if base and component.get("name"):
                repo = f"{base}/component-descriptors/{component['name']}"
                return install, f"oci://{repo}@{access['localReference']}"
    return None
