"""Raw-manifest layers of OCI artifacts: a module's YAML, published with `oras push` (or as an
OCM local blob) instead of at an http(s) URL.

`oci://registry/repo/module:1.0` (or `@sha256:<manifest digest>`) names an artifact whose one
YAML layer (media type or title says YAML; else its only layer) is the module; a digest that names a
blob is read as the layer itself, which is how lifecycle-manager's ImageSpec (`repo`,
`name`, `ref` = a blob digest, `type: oci-ref`) names it. The layer may be plain YAML or a
(gzipped) tar of YAML files. Layers are cached by digest (bounded, least recently used out), and
a versioned or digest-pinned reference is resolved once, so a Manifest's steady state costs no
registry request.
"""

from __future__ import annotations

import asyncio
import io
import json
import tarfile
import zlib
from collections import OrderedDict
from typing import Any

from reconciler.charts.oci import OciPuller, OciReference, parse_oci_reference
from reconciler.errors import ChartError

MAX_LAYER_BYTES = 32 * 1024 * 1024
MAX_CACHED_BYTES = 128 * 1024 * 1024
MAX_TAR_MEMBERS = 1_000
TITLE = "org.opencontainers.image.title"
HELM_CONFIG = "application/vnd.cncf.helm.config.v1+json"
_GZIP = b"\x1f\x8b"
WHAT = "raw manifest"


def _is_yaml(layer: dict[str, Any]) -> bool:
    media_type = str(layer.get("mediaType", ""))
    title = str((layer.get("annotations") or {}).get(TITLE, ""))
    return "yaml" in media_type or "raw-manifest" in media_type or title.endswith((".yaml", ".yml"))


def yaml_layer(manifest: dict[str, Any], ref: OciReference) -> str:
    """The digest of the one layer of `manifest` that holds the module's YAML."""
    if (manifest.get("config") or {}).get("mediaType") == HELM_CONFIG:
        raise ChartError(f"{WHAT} {ref}: is a Helm chart; link it as the template's `chart`")
    layers = [layer for layer in manifest.get("layers") or [] if isinstance(layer, dict)]
    chosen = [layer for layer in layers if _is_yaml(layer)] or (layers if len(layers) == 1 else [])
    if len(chosen) != 1:
        types = ", ".join(str(layer.get("mediaType")) for layer in layers) or "none"
        raise ChartError(
            f"{WHAT} {ref}: expected one YAML layer, the artifact has {len(layers)} ({types})"
        )
    return str(chosen[0].get("digest", ""))


def _is_manifest(data: bytes) -> bool:
    """True for an image manifest that a registry served at its blob endpoint."""
    if not data.startswith(b"{"):
        return False
    try:
        body = json.loads(data)
    except ValueError:
        return False
    return isinstance(body, dict) and "schemaVersion" in body and "layers" in body


def decode_layer(data: bytes, ref: OciReference) -> str:
    """The YAML text of a layer: as is, gunzipped, or a tar's YAML files in name order."""
    if data[:2] == _GZIP:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            data = inflater.decompress(data, MAX_LAYER_BYTES + 1)
        except zlib.error as exc:
            raise ChartError(f"{WHAT} {ref}: broken gzip layer: {exc}") from None
        if len(data) > MAX_LAYER_BYTES:
            raise ChartError(f"{WHAT} {ref}: unpacks to more than {MAX_LAYER_BYTES} bytes")
    if data[257:262] == b"ustar":
        data = _tar_yaml(data, ref)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ChartError(f"{WHAT} {ref}: the layer is not UTF-8 YAML") from None


def _tar_yaml(data: bytes, ref: OciReference) -> bytes:
    parts: list[tuple[str, bytes]] = []
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for count, member in enumerate(tar, start=1):
                if count > MAX_TAR_MEMBERS:
                    raise ChartError(f"{WHAT} {ref}: more than {MAX_TAR_MEMBERS} files in the tar")
                if member.isfile() and member.name.endswith((".yaml", ".yml")):
                    stream = tar.extractfile(member)
                    parts.append((member.name, stream.read() if stream else b""))
    except tarfile.TarError as exc:
        raise ChartError(f"{WHAT} {ref}: broken tar layer: {exc}") from None
    if not parts:
        raise ChartError(f"{WHAT} {ref}: the tar layer holds no .yaml file")
    return b"\n---\n".join(content for _, content in sorted(parts))


class RawManifestLayers:
    """Fetches raw-manifest layers by OCI reference; one instance per chart provider."""

    def __init__(self, puller: OciPuller | None = None, max_bytes: int = MAX_CACHED_BYTES) -> None:
        self.puller = puller or OciPuller(what=WHAT)
        self.max_bytes = max_bytes
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._size = 0
        self._resolved: dict[str, str] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def text(self, link: str) -> str:
        ref = parse_oci_reference(link, what=WHAT)
        async with self._locks.setdefault(str(ref), asyncio.Lock()):
            digest = self._resolved.get(str(ref))
            if digest is None or digest not in self._texts:
                digest, data = await self._layer(ref)
                if data is not None:
                    self._keep(digest, await asyncio.to_thread(decode_layer, data, ref))
            self._texts.move_to_end(digest)
            if ref.pinned:
                self._resolved[str(ref)] = digest
            return self._texts[digest]

    async def _layer(self, ref: OciReference) -> tuple[str, bytes | None]:
        """The digest and content (None when cached) of the module's layer.

        A digest in the reference may name the layer itself (a blob: lifecycle-manager's
        ImageSpec, OCM local blobs) or an artifact's manifest: the blob is asked for first, as
        a registry serves a manifest at its manifest endpoint only."""
        if ref.digest:
            data = await self.puller.blob(ref, ref.digest, MAX_LAYER_BYTES)
            if data is not None and not _is_manifest(data):
                return ref.digest, data
        found = await self.puller.manifest(ref)
        if found is None:
            raise ChartError(f"{WHAT} {ref}: not found in the registry")
        digest = yaml_layer(found[1], ref)
        if digest in self._texts:
            return digest, None
        data = await self.puller.blob(ref, digest, MAX_LAYER_BYTES)
        if data is None:
            raise ChartError(f"{WHAT} {ref}: layer {digest} not found in the registry")
        return digest, data

    def _keep(self, digest: str, text: str) -> None:
        self._texts[digest] = text
        self._size += len(text)
        while self._size > self.max_bytes and len(self._texts) > 1:
            gone, dropped = self._texts.popitem(last=False)
            self._size -= len(dropped)
            self._resolved = {k: v for k, v in self._resolved.items() if v != gone}
