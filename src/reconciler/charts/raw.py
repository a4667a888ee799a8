"""Raw manifests (lifecycle-manager's `rawManifest`): one YAML document stream at a local path,
an http(s) URL (what most module templates carry) or an OCI artifact's layer (`layers.py`),
split and checked exactly as Helm's rendered output, and applied as written."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from reconciler.charts.layers import RawManifestLayers
from reconciler.charts.manifests import split_documents, to_objects
from reconciler.charts.policy import SourcePolicy, redact
from reconciler.errors import ChartError
from reconciler.model.kube_object import KubeObject

MAX_MANIFEST_BYTES = 32 * 1024 * 1024


class RawManifests:
    def __init__(
        self,
        *,
        timeout: float = 60.0,
        layers: RawManifestLayers | None = None,
        policy: SourcePolicy | None = None,
    ) -> None:
        self.timeout = timeout
        self.layers = layers or RawManifestLayers()
        self.policy = policy or SourcePolicy()
        """What may be fetched: checked before, and on every redirect (`charts/policy.py`)."""

    async def text(self, link: str) -> str:
        """The manifest's text, fetched anew (an OCI layer: from the layer cache)."""
        self.policy.check("raw manifest", link)
        if link.startswith("oci://"):
            return await self.layers.text(link)
        if link.startswith(("http://", "https://")):
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                try:
                    async with self.policy.get_checked(client, "raw manifest", link) as response:
                        await response.aread()
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


def objects_of(link: str, text: str) -> list[KubeObject]:
    """The objects of a raw manifest's `text`, named by its (redacted) `link` in errors."""
    return to_objects(Path(redact(link)), split_documents(redact(link), text))
