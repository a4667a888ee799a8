"""Where a module's objects come from: a Helm chart through the core's chart provider, or a raw
manifest (`rawManifest`: one YAML document stream at a local path or an http(s) URL, what most
lifecycle-manager module templates carry), split and checked exactly as Helm's rendered output.

The Task only carries the link; the Manifest controller marks which links are raw manifests
(`mark_raw`) before the core runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import httpx

from reconciler.charts.manifests import split_documents, to_objects
from reconciler.charts.render import Capabilities
from reconciler.charts.sources import redact
from reconciler.core.charts import ChartProvider
from reconciler.errors import ChartError
from reconciler.model.kube_object import KubeObject
from reconciler.model.task import Task
from reconciler.version import __version__

MAX_MANIFEST_BYTES = 32 * 1024 * 1024


class ModuleSources:
    def __init__(self, charts: ChartProvider, *, timeout: float = 60.0) -> None:
        self.charts = charts
        self.timeout = timeout
        self._raw: set[str] = set()

    def mark_raw(self, link: str) -> None:
        self._raw.add(link)

    async def _text(self, link: str) -> str:
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
