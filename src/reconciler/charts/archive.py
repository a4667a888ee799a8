"""Unpacking chart archives into the content-addressed cache, safely and atomically.

An archive is checked before anything is written (gzip magic, no absolute or `..` member names,
bounded size and member count). Headers are read one at a time and the first member past a
limit stops the reading, so an archive of 390,000 empty members costs what its first 20,000
cost (`getmembers()` read every header first: 6.8 s and 218 MiB). The checked members are then
extracted with tarfile's "data" filter into a temporary sibling directory and renamed into
place, so the cache only ever holds complete charts. Blocking; callers run it in a worker
thread.
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


def extract_chart(
    archive: Path,
    destination: Path,
    *,
    source: str,
    max_members: int = MAX_MEMBERS,
    max_bytes: int = MAX_UNPACKED_BYTES,
) -> Path:
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
            members = _checked_members(tar, source, max_members, max_bytes)
            tar.extractall(staging, members=members, filter="data")
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


def _checked_members(
    tar: tarfile.TarFile, source: str, max_members: int, max_bytes: int
) -> list[tarfile.TarInfo]:
    """The archive's members, read one header at a time up to the first one that is unsafe or
    past a limit (ChartError)."""
    members = []
    total = 0
    for count, member in enumerate(tar, start=1):  # lazily: never all headers first
        if count > max_members:
            raise ChartError(f"chart source {source}: archive has more than {max_members} entries")
        name = PurePosixPath(member.name)
        if name.is_absolute() or member.name.startswith("\\") or ".." in name.parts:
            raise ChartError(f"chart source {source}: unsafe path {member.name!r} in the archive")
        total += max(member.size, 0)
        if total > max_bytes:
            raise ChartError(
                f"chart source {source}: archive unpacks to more than "
                f"{max_bytes // (1024 * 1024)} MiB"
            )
        members.append(member)
    return members
