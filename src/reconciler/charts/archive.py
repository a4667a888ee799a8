"""Unpacking chart archives into the content-addressed cache, safely and atomically.

An archive is checked before anything is written (gzip magic, no absolute or `..` member names,
bounded size and member count), extracted with tarfile's "data" filter into a temporary sibling
directory and renamed into place, so the cache only ever holds complete charts. Blocking; callers
run it in a worker thread.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import zlib
from pathlib import Path, PurePosixPath

from reconciler.errors import ChartError

MAX_UNPACKED_BYTES = 512 * 1024 * 1024
MAX_MEMBERS = 20_000
_GZIP_MAGIC = b"\x1f\x8b"


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's content."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def extract_chart(archive: Path, destination: Path, *, source: str) -> Path:
    """Unpack `archive` to `destination` (unless already there); return the chart directory."""
    if destination.is_dir():
        return find_chart_dir(destination, source=source)
    with archive.open("rb") as stream:
        if stream.read(2) != _GZIP_MAGIC:
            raise ChartError(f"chart source {source}: not a gzip-compressed chart archive")
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".extract-", dir=destination.parent))
    try:
        with tarfile.open(archive, "r:gz") as tar:
            _check_members(tar.getmembers(), source)
            tar.extractall(staging, filter="data")
        find_chart_dir(staging, source=source)
        try:
            os.rename(staging, destination)
        except OSError:
            if not destination.is_dir():
                raise
            shutil.rmtree(staging)  # another process extracted the same digest first
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ChartError(f"chart source {source}: broken chart archive: {exc}") from exc
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return find_chart_dir(destination, source=source)


def find_chart_dir(root: Path, *, source: str) -> Path:
    """`root` itself or its single subdirectory holding a Chart.yaml (how `helm package` packs)."""
    if (root / "Chart.yaml").is_file():
        return root
    charts = sorted(d for d in root.iterdir() if d.is_dir() and (d / "Chart.yaml").is_file())
    if len(charts) == 1:
        return charts[0]
    if not charts:
        raise ChartError(f"chart source {source}: no Chart.yaml in the archive")
    names = ", ".join(d.name for d in charts)
    raise ChartError(f"chart source {source}: the archive holds several charts ({names})")


def _check_members(members: list[tarfile.TarInfo], source: str) -> None:
    if len(members) > MAX_MEMBERS:
        raise ChartError(f"chart source {source}: archive has more than {MAX_MEMBERS} entries")
    total = 0
    for member in members:
        name = PurePosixPath(member.name)
        if name.is_absolute() or member.name.startswith("\\") or ".." in name.parts:
            raise ChartError(f"chart source {source}: unsafe path {member.name!r} in the archive")
        total += max(member.size, 0)
        if total > MAX_UNPACKED_BYTES:
            raise ChartError(
                f"chart source {source}: archive unpacks to more than "
                f"{MAX_UNPACKED_BYTES // (1024 * 1024)} MiB"
            )
