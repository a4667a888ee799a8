"""Chart sources: turning a task's chart reference into a local chart directory.

A source is a local chart directory (used in place), a local `.tgz`, an `http(s)://` URL of a
`.tgz` or an `oci://registry/repo/chart[:version][@sha256:...]` reference (pulled by Helm; plain
HTTP for loopback registries, see `oci.py`). Archives land in a content-addressed cache
(`root/<sha256>/`); a small index remembers which digest a URL (or versioned or digest-pinned
OCI reference) resolved to, so it is downloaded once per cache, and concurrent fetches of one source
share a single download. The cache is bounded (`max_bytes`, least recently used entries go
first; see `cache_quota.py`). Credentials in URLs never reach error messages.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit
from urllib.request import url2pathname

import httpx
from pydantic import BaseModel, ValidationError

from reconciler.charts import cache_quota
from reconciler.charts.archive import (
    MAX_UNPACKED_BYTES,
    extract_chart,
    find_chart_dir,
    sha256_file,
)
from reconciler.charts.oci import OciReference, is_loopback, parse_oci_reference
from reconciler.charts.policy import SourcePolicy, redact
from reconciler.errors import ChartError

__all__ = ["ChartCache", "OciReference", "parse_oci_reference", "redact"]

MAX_DOWNLOAD_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_CACHE_BYTES = 2 * 1024 * 1024 * 1024
EVICTION_GRACE = 60.0
"""Seconds an entry is safe from eviction after its last use (it may be rendered right now)."""
INDEX_FILE = "sources.json"


class _SourceIndex(BaseModel):
    """`root/sources.json`: which digest each immutable remote source resolved to."""

    sources: dict[str, str] = {}


class ChartCache:
    """Fetches chart sources into `root`; one instance per process and event loop."""

    def __init__(
        self,
        root: Path,
        *,
        http: httpx.AsyncClient | None = None,
        timeout: float = 60.0,
        oci_plain_http: bool = False,
        max_bytes: int = DEFAULT_MAX_CACHE_BYTES,
        eviction_grace: float = EVICTION_GRACE,
    ) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.eviction_grace = eviction_grace
        self._sizes: dict[str, int] = {}
        self._http = http
        self._timeout = timeout
        self._oci_plain_http = oci_plain_http
        self._inflight: dict[str, asyncio.Task[Path]] = {}
        self._index_lock = asyncio.Lock()

    async def fetch(self, source: str, policy: SourcePolicy | None = None) -> Path:
        """A local directory holding the chart `source` refers to (with its Chart.yaml);
        `policy`: what may be fetched (checked before, and on every redirect; default all)."""
        policy = policy or SourcePolicy()
        policy.check("chart source", source)
        if source.startswith("oci://"):
            return await self._once(source, lambda: self._fetch_oci(source))
        scheme = urlsplit(source).scheme
        if scheme in ("http", "https"):
            return await self._once(source, lambda: self._fetch_http(source, policy))
        if scheme == "file":
            return await self._fetch_local(source, Path(url2pathname(urlsplit(source).path)))
        if len(scheme) > 1:
            raise ChartError(f"chart source {redact(source)}: unsupported scheme {scheme!r}")
        return await self._fetch_local(source, Path(source))

    async def _once(self, key: str, start: Callable[[], Awaitable[Path]]) -> Path:
        """Run `start` once per key at a time; concurrent callers await the same result."""
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.ensure_future(start())
            self._inflight[key] = task

            def done(finished: asyncio.Task[Path]) -> None:
                if self._inflight.get(key) is finished:
                    del self._inflight[key]
                if not finished.cancelled():
                    finished.exception()  # retrieved here so an orphaned failure is not logged

            task.add_done_callback(done)
        return await asyncio.shield(task)

    async def _fetch_local(self, source: str, path: Path) -> Path:
        path, digest = await asyncio.to_thread(_inspect_local, source, path)
        return path if digest is None else await self._extract(path, digest, source)

    async def _extract(self, archive: Path, digest: str, source: str) -> Path:
        destination = self.root / digest
        return await self._once(
            f"sha256:{digest}",
            lambda: asyncio.to_thread(self._extract_bounded, archive, destination, source),
        )

    def _extract_bounded(self, archive: Path, destination: Path, source: str) -> Path:
        """Extract (or reuse) an entry, mark it used, and make room for it when it is new."""
        new = not destination.is_dir()
        limit = min(MAX_UNPACKED_BYTES, self.max_bytes)  # one chart never outgrows the cache
        chart = extract_chart(archive, destination, source=source, max_bytes=limit)
        cache_quota.touch(destination)
        if new:
            cache_quota.evict(
                self.root,
                self.max_bytes,
                keep=destination.name,
                grace=self.eviction_grace,
                sizes=self._sizes,
            )
        return chart

    async def _cached(self, source: str) -> Path | None:
        digest = (await asyncio.to_thread(self._read_index)).sources.get(source)
        if digest is None or not (self.root / digest).is_dir():
            return None
        await asyncio.to_thread(cache_quota.touch, self.root / digest)
        return await asyncio.to_thread(find_chart_dir, self.root / digest, source=redact(source))

    async def _fetch_http(self, url: str, policy: SourcePolicy) -> Path:
        cached = await self._cached(url)
        if cached is not None:
            return cached
        shown = redact(url)
        expected = _expected_digest(url)
        staging = await asyncio.to_thread(self._staging_dir)
        fd, name = tempfile.mkstemp(suffix=".tgz.part", dir=staging)
        archive = Path(name)
        try:
            with os.fdopen(fd, "wb") as stream:
                digest = await self._download(url, shown, stream, policy)
            if expected is not None and digest != expected:
                raise ChartError(
                    f"chart source {shown}: sha256 {digest} does not match the expected {expected}"
                )
            chart = await self._extract(archive, digest, shown)
        finally:
            await asyncio.to_thread(archive.unlink, missing_ok=True)
        await self._remember(url, digest)
        return chart

    async def _download(self, url: str, shown: str, stream: BinaryIO, policy: SourcePolicy) -> str:
        """Stream `url` into `stream`; return the sha256 of what was received."""
        digest = hashlib.sha256()
        size = 0
        client = self._http or httpx.AsyncClient(timeout=self._timeout)
        try:
            async with policy.get_checked(client, "chart source", url) as response:
                if response.status_code >= 400:
                    raise ChartError(
                        f"chart source {shown}: HTTP {response.status_code} "
                        f"{response.reason_phrase}".rstrip()
                    )
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > MAX_DOWNLOAD_BYTES:
                        raise ChartError(
                            f"chart source {shown}: larger than {MAX_DOWNLOAD_BYTES} bytes"
                        )
                    digest.update(chunk)
                    stream.write(chunk)
        except httpx.HTTPError as exc:
            cause = str(exc) or type(exc).__name__
            raise ChartError(f"chart source {shown}: download failed: {cause}") from exc
        finally:
            if self._http is None:
                await client.aclose()
        return digest.hexdigest()

    async def _fetch_oci(self, source: str) -> Path:
        reference = parse_oci_reference(source)
        if reference.pinned:
            cached = await self._cached(source)
            if cached is not None:
                return cached
        try:
            from helm_python import HelmError, pull
        except Exception as exc:  # the native library raises its own error types on import
            raise ChartError(f"chart source {source}: helm_python unavailable: {exc}") from exc
        # Helm takes a digest only inside the reference (`chart:1.0@sha256:...`), not as version
        chart_ref, version = (
            (str(reference), None)
            if reference.digest
            else (reference.repository, reference.version)
        )
        staging = await asyncio.to_thread(self._staging_dir)
        with tempfile.TemporaryDirectory(dir=staging, prefix="oci-") as pulled:
            try:
                await asyncio.to_thread(
                    pull,
                    chart_ref,
                    version=version,
                    destination=pulled,
                    plain_http=self._oci_plain_http or is_loopback(reference.host),
                )
            except HelmError as exc:
                raise ChartError(f"chart source {source}: pull failed: {exc}") from exc
            archive = Path(pulled, f"{reference.repository.rpartition('/')[2]}.tgz")
            digest = await asyncio.to_thread(_single_archive, source, Path(pulled), archive)
            chart = await self._extract(archive, digest, source)
        if reference.pinned:
            await self._remember(source, digest)
        return chart

    def _staging_dir(self) -> Path:
        staging = self.root / ".staging"
        staging.mkdir(parents=True, exist_ok=True)
        return staging

    def _read_index(self) -> _SourceIndex:
        try:
            return _SourceIndex.model_validate_json((self.root / INDEX_FILE).read_bytes())
        except (FileNotFoundError, ValidationError):
            return _SourceIndex()  # a lost index only costs a download

    async def _remember(self, source: str, digest: str) -> None:
        async with self._index_lock:
            await asyncio.to_thread(self._write_index, source, digest)

    def _write_index(self, source: str, digest: str) -> None:
        index = self._read_index()
        index.sources[source] = digest
        fd, tmp = tempfile.mkstemp(prefix=".index-", dir=self.root)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(index.model_dump(), out, indent=1, sort_keys=True)
        os.replace(tmp, self.root / INDEX_FILE)


def _expected_digest(url: str) -> str | None:
    """`https://host/chart.tgz#sha256=<hex>` pins the archive's digest."""
    fragment = urlsplit(url).fragment
    key, _, value = fragment.partition("=")
    return value.lower() if key == "sha256" and value else None


def _inspect_local(source: str, path: Path) -> tuple[Path, str | None]:
    """The path (`~` expanded) and None for a chart directory or the sha256 for an archive."""
    path = path.expanduser()
    if path.is_dir():
        if not (path / "Chart.yaml").is_file():
            raise ChartError(f"chart source {source}: the directory has no Chart.yaml")
        return path, None
    if not path.is_file():
        raise ChartError(f"chart source {source}: no such file or directory")
    return path, sha256_file(path)


def _single_archive(source: str, directory: Path, target: Path) -> str:
    """Move the one archive a pull left in `directory` to `target`; return its sha256."""
    archives = sorted(directory.glob("*.tgz"))
    if len(archives) != 1:
        raise ChartError(f"chart source {source}: the pull produced no single chart archive")
    if archives[0] != target:
        archives[0].rename(target)
    return sha256_file(target)
