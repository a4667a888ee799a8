"""OCI image layouts on disk, and moving an image between one and a registry (API v2).

The image build (`devcluster/image.py`) writes its result here as an OCI image layout
(`oci-layout`, `index.json`, `blobs/sha256/...`), the format every registry tool reads. Pushing
and pulling speak the registry's HTTP API directly: a build machine needs no Docker daemon,
skopeo or crane for it, and the test pulls back exactly what a cluster would pull.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from reconciler.errors import DevClusterError

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(CHUNK):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


@dataclass(frozen=True)
class Descriptor:
    media_type: str
    digest: str
    size: int

    def as_json(self) -> dict[str, Any]:
        return {"mediaType": self.media_type, "digest": self.digest, "size": self.size}


class Layout:
    """One OCI image layout directory; blobs are content-addressed, so images share them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)
        (root / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')

    def blob(self, digest: str) -> Path:
        return self.root / "blobs" / "sha256" / digest.removeprefix("sha256:")

    def add_file(self, path: Path, media_type: str) -> Descriptor:
        """Move a finished file into the blob store (by digest)."""
        digest = sha256_file(path)
        target = self.blob(digest)
        size = path.stat().st_size
        path.chmod(0o644)
        path.replace(target)
        return Descriptor(media_type, digest, size)

    def add_json(self, document: dict[str, Any], media_type: str) -> Descriptor:
        data = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self.blob(digest).write_bytes(data)
        return Descriptor(media_type, digest, len(data))

    def tag(self, manifest: Descriptor, name: str) -> None:
        """Point `name` at the manifest in index.json (replacing an older one of that name)."""
        index_file = self.root / "index.json"
        index = json.loads(index_file.read_text()) if index_file.exists() else {}
        ref = "org.opencontainers.image.ref.name"
        kept = [m for m in index.get("manifests", []) if m.get("annotations", {}).get(ref) != name]
        entry = {**manifest.as_json(), "annotations": {ref: name}}
        index_file.write_text(json.dumps({"schemaVersion": 2, "manifests": [*kept, entry]}))

    def manifest(self, name: str) -> Descriptor:
        index = json.loads((self.root / "index.json").read_text())
        for entry in index["manifests"]:
            if entry.get("annotations", {}).get("org.opencontainers.image.ref.name") == name:
                return Descriptor(entry["mediaType"], entry["digest"], entry["size"])
        raise DevClusterError(f"no image {name!r} in {self.root}")

    def read_json(self, digest: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.blob(digest).read_bytes())
        return data


def _base_url(registry: str) -> str:
    host = registry.split(":")[0]
    plain = host in ("localhost", "127.0.0.1", "::1") or host.startswith("127.")
    return f"{'http' if plain else 'https'}://{registry}"


def _check(response: httpx.Response, what: str) -> httpx.Response:
    if response.status_code >= 400:
        raise DevClusterError(f"registry refused {what}: HTTP {response.status_code}")
    return response


def _chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as stream:
        while block := stream.read(CHUNK):
            yield block


def push(layout: Layout, name: str, registry: str, repository: str, tag: str) -> str:
    """Upload the image `name` of the layout as `registry/repository:tag`; return its digest.
    Blobs the registry already has are not sent again."""
    manifest_desc = layout.manifest(name)
    manifest = layout.read_json(manifest_desc.digest)
    blobs = [manifest["config"], *manifest["layers"]]
    with httpx.Client(base_url=_base_url(registry), timeout=300.0) as http:
        for blob in blobs:
            digest = blob["digest"]
            if http.head(f"/v2/{repository}/blobs/{digest}").status_code == 200:
                continue
            started = _check(http.post(f"/v2/{repository}/blobs/uploads/"), "an upload")
            # the upload URL carries the registry's own state in its query: add to it
            location = httpx.URL(started.headers["Location"]).copy_add_param("digest", digest)
            _check(
                http.put(
                    location,
                    content=_chunks(layout.blob(digest)),
                    headers={
                        "Content-Type": "application/octet-stream",
                        "Content-Length": str(blob["size"]),
                    },
                ),
                f"blob {digest}",
            )
        _check(
            http.put(
                f"/v2/{repository}/manifests/{tag}",
                content=layout.blob(manifest_desc.digest).read_bytes(),
                headers={"Content-Type": MANIFEST},
            ),
            f"manifest {repository}:{tag}",
        )
    return manifest_desc.digest


def pull_rootfs(registry: str, repository: str, tag: str, target: Path) -> dict[str, Any]:
    """Fetch `registry/repository:tag`, verify every blob's digest, unpack its layers in order
    into `target` (a root file system to chroot into); return the image configuration."""
    with httpx.Client(base_url=_base_url(registry), timeout=300.0) as http:
        manifest = _check(
            http.get(f"/v2/{repository}/manifests/{tag}", headers={"Accept": MANIFEST}),
            f"manifest {repository}:{tag}",
        ).json()
        config = _fetch(http, repository, manifest["config"]["digest"])
        target.mkdir(parents=True, exist_ok=True)
        for layer in manifest["layers"]:
            data = _fetch(http, repository, layer["digest"])
            with tarfile.open(fileobj=_gunzipped(data), mode="r|") as archive:
                archive.extractall(target, filter="tar")
    document: dict[str, Any] = json.loads(config)
    return document


def _fetch(http: httpx.Client, repository: str, digest: str) -> bytes:
    data = _check(http.get(f"/v2/{repository}/blobs/{digest}"), f"blob {digest}").content
    if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
        raise DevClusterError(f"blob {digest} does not match its digest")
    return data


def _gunzipped(data: bytes) -> gzip.GzipFile:
    import io

    return gzip.GzipFile(fileobj=io.BytesIO(data))
