"""The chart cache is bounded: archives are streamed and stop at the member and byte limits
(a member-count bomb is refused without reading all its headers), and the cache as a whole keeps
to its size limit by removing the least recently used charts."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
from pathlib import Path

import pytest

from reconciler.charts.archive import extract_chart
from reconciler.charts.sources import ChartCache
from reconciler.errors import ChartError
from tests.charts.support import tgz_with

KIB = 1024


def cache_entries(root: Path) -> list[str]:
    return (
        sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
        if root.exists()
        else []
    )


def member_bomb(path: Path, members: int) -> None:
    """`members` empty files after a Chart.yaml, and then a stream that breaks off: whoever
    reads every header first (getmembers) meets the break, a streaming reader stops before."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        chart = tarfile.TarInfo("bomb/Chart.yaml")
        chart.size = 11
        tar.addfile(chart, io.BytesIO(b"name: bomb\n"))
        for i in range(members):
            tar.addfile(tarfile.TarInfo(f"bomb/f{i}"))
    data = gzip.compress(raw.getvalue(), compresslevel=1)
    path.write_bytes(data[: len(data) * 9 // 10])  # the last tenth of the stream is missing


def chart_archive(path: Path, name: str, size: int) -> Path:
    path.write_bytes(
        tgz_with(
            {f"{name}/Chart.yaml": f"name: {name}\n".encode(), f"{name}/blob": os.urandom(size)}
        )
    )
    return path


async def test_a_member_count_bomb_is_refused_at_the_limit_without_reading_all_headers(
    tmp_path: Path,
) -> None:
    archive = tmp_path / "bomb.tgz"
    member_bomb(archive, 2_000)
    with pytest.raises(ChartError, match="more than 500 entries"):
        extract_chart(archive, tmp_path / "cache" / "bomb", source="bomb.tgz", max_members=500)
    assert cache_entries(tmp_path / "cache") == []
    assert not any((tmp_path / "cache").glob(".extract-*"))  # nothing was written


async def test_an_archive_larger_than_the_cache_is_refused_while_streaming(tmp_path: Path) -> None:
    archive = chart_archive(tmp_path / "big.tgz", "big", 2 * KIB * KIB)
    cache = ChartCache(tmp_path / "cache", max_bytes=KIB * KIB)
    with pytest.raises(ChartError, match="unpacks to more than 1 MiB"):
        await cache.fetch(str(archive))
    assert cache_entries(tmp_path / "cache") == []


async def test_the_least_recently_used_charts_leave_when_the_cache_is_full(tmp_path: Path) -> None:
    cache = ChartCache(tmp_path / "cache", max_bytes=700 * KIB, eviction_grace=0)
    a, b, c = (chart_archive(tmp_path / f"{n}.tgz", n, 300 * KIB) for n in "abc")
    chart_a = await cache.fetch(str(a))
    chart_b = await cache.fetch(str(b))
    os.utime(chart_b.parent, (1, 1))  # b was used long ago ...
    assert await cache.fetch(str(a)) == chart_a  # ... a just now
    chart_c = await cache.fetch(str(c))
    assert cache_entries(tmp_path / "cache") == sorted([chart_a.parent.name, chart_c.parent.name])
    assert (chart_a / "blob").is_file()
    assert await cache.fetch(str(b)) == chart_b  # an evicted chart is simply extracted again


async def test_charts_used_within_the_grace_period_are_kept_over_the_limit(tmp_path: Path) -> None:
    cache = ChartCache(tmp_path / "cache", max_bytes=400 * KIB, eviction_grace=3600)
    for name in "ab":
        await cache.fetch(str(chart_archive(tmp_path / f"{name}.tgz", name, 300 * KIB)))
    assert len(cache_entries(tmp_path / "cache")) == 2
