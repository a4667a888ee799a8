"""ChartCache: local directories, local and downloaded archives, OCI references."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from reconciler.charts.sources import ChartCache, OciReference, parse_oci_reference, redact
from reconciler.errors import ChartError
from tests.charts.support import FIXTURE_CHARTS, ChartServer, closed_port, tgz_of, tgz_with

PLAIN = FIXTURE_CHARTS / "plain"


def cache_entries(root: Path) -> list[str]:
    """What the cache holds besides its bookkeeping: extracted charts."""
    if not root.exists():
        return []
    return sorted(p.name for p in root.iterdir() if not p.name.startswith("."))


async def test_local_chart_directory_is_used_in_place(tmp_path: Path) -> None:
    assert await ChartCache(tmp_path).fetch(str(PLAIN)) == PLAIN


async def test_directory_without_chart_yaml_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ChartError, match=f"{tmp_path}.*no Chart.yaml"):
        await ChartCache(tmp_path / "cache").fetch(str(tmp_path))


async def test_missing_local_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ChartError, match="no such file or directory"):
        await ChartCache(tmp_path).fetch(str(tmp_path / "nope"))


async def test_local_archive_is_extracted_into_the_cache_by_digest(tmp_path: Path) -> None:
    data = tgz_of(PLAIN)
    archive = tmp_path / "plain-0.1.0.tgz"
    archive.write_bytes(data)
    cache = ChartCache(tmp_path / "cache")

    chart = await cache.fetch(str(archive))

    digest = hashlib.sha256(data).hexdigest()
    assert chart == tmp_path / "cache" / digest / "plain"
    assert (chart / "templates" / "deployment.yaml").read_text() == (
        PLAIN / "templates" / "deployment.yaml"
    ).read_text()
    assert await cache.fetch(str(archive)) == chart


async def test_archive_with_parent_path_member_is_rejected(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tgz"
    archive.write_bytes(tgz_with({"demo/Chart.yaml": b"name: demo\n", "../escape.txt": b"x"}))
    cache = ChartCache(tmp_path / "cache")
    with pytest.raises(ChartError, match=r"evil\.tgz: unsafe path '\.\./escape\.txt'"):
        await cache.fetch(str(archive))
    assert not (tmp_path / "escape.txt").exists()
    assert cache_entries(tmp_path / "cache") == []


async def test_archive_with_absolute_member_is_rejected(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tgz"
    archive.write_bytes(tgz_with({"/tmp/demo/Chart.yaml": b"name: demo\n"}))
    with pytest.raises(ChartError, match=r"unsafe path '/tmp/demo/Chart\.yaml'"):
        await ChartCache(tmp_path / "cache").fetch(str(archive))


async def test_file_that_is_not_gzip_is_an_error(tmp_path: Path) -> None:
    archive = tmp_path / "chart.tgz"
    archive.write_text("apiVersion: v2\n")
    with pytest.raises(ChartError, match=r"chart\.tgz: not a gzip-compressed chart archive"):
        await ChartCache(tmp_path / "cache").fetch(str(archive))


async def test_archive_without_chart_yaml_is_an_error(tmp_path: Path) -> None:
    archive = tmp_path / "empty.tgz"
    archive.write_bytes(tgz_with({"demo/values.yaml": b"a: 1\n"}))
    cache = ChartCache(tmp_path / "cache")
    with pytest.raises(ChartError, match=r"no Chart\.yaml in the archive"):
        await cache.fetch(str(archive))
    assert cache_entries(tmp_path / "cache") == []


async def test_concurrent_fetches_of_one_url_share_one_download(
    tmp_path: Path, chart_server: ChartServer
) -> None:
    chart_server.routes["/plain-0.1.0.tgz"] = (200, tgz_of(PLAIN))
    url = chart_server.url("/plain-0.1.0.tgz")
    cache = ChartCache(tmp_path / "cache")

    results = await asyncio.gather(*(cache.fetch(url) for _ in range(10)))

    assert len(set(results)) == 1
    assert (results[0] / "Chart.yaml").is_file()
    assert chart_server.requests["/plain-0.1.0.tgz"] == 1


async def test_a_url_fetched_before_is_not_downloaded_again(
    tmp_path: Path, chart_server: ChartServer
) -> None:
    chart_server.routes["/plain.tgz"] = (200, tgz_of(PLAIN))
    url = chart_server.url("/plain.tgz")
    first = await ChartCache(tmp_path / "cache").fetch(url)

    again = await ChartCache(tmp_path / "cache").fetch(url)  # a new process, same cache

    assert again == first
    assert chart_server.requests["/plain.tgz"] == 1
    index = json.loads((tmp_path / "cache" / "sources.json").read_text())
    assert index["sources"][url] == first.parent.name


async def test_http_error_status_is_reported(tmp_path: Path, chart_server: ChartServer) -> None:
    url = chart_server.url("/missing.tgz")
    with pytest.raises(ChartError, match=rf"{url}: HTTP 404 Not Found"):
        await ChartCache(tmp_path / "cache").fetch(url)


async def test_unreachable_server_is_reported(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/chart.tgz"
    with pytest.raises(ChartError, match=rf"{url}: download failed"):
        await ChartCache(tmp_path / "cache").fetch(url)


async def test_interrupted_download_leaves_nothing_behind(
    tmp_path: Path, chart_server: ChartServer
) -> None:
    chart_server.routes["/plain.tgz"] = (200, tgz_of(PLAIN))
    chart_server.truncated.add("/plain.tgz")
    url = chart_server.url("/plain.tgz")
    cache = ChartCache(tmp_path / "cache")

    with pytest.raises(ChartError, match="download failed"):
        await cache.fetch(url)

    assert cache_entries(tmp_path / "cache") == []
    assert list((tmp_path / "cache" / ".staging").iterdir()) == []
    chart_server.truncated.clear()
    assert (await cache.fetch(url)).name == "plain"


async def test_pinned_digest_is_verified(tmp_path: Path, chart_server: ChartServer) -> None:
    data = tgz_of(PLAIN)
    chart_server.routes["/plain.tgz"] = (200, data)
    good = hashlib.sha256(data).hexdigest()
    cache = ChartCache(tmp_path / "cache")

    with pytest.raises(ChartError, match="does not match the expected 0000"):
        await cache.fetch(chart_server.url("/plain.tgz#sha256=" + "0" * 64))
    assert (await cache.fetch(chart_server.url(f"/plain.tgz#sha256={good}"))).name == "plain"


async def test_downloaded_garbage_is_not_a_chart(tmp_path: Path, chart_server: ChartServer) -> None:
    chart_server.routes["/index.html"] = (200, b"<html>login</html>")
    url = chart_server.url("/index.html")
    with pytest.raises(ChartError, match=rf"{url}: not a gzip-compressed chart archive"):
        await ChartCache(tmp_path / "cache").fetch(url)


def test_credentials_in_urls_are_redacted() -> None:
    assert redact("https://user:secret@host/c.tgz?token=abc") == "https://host/c.tgz"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "oci://registry.example.com/charts/istio:1.2.3",
            OciReference("oci://registry.example.com/charts/istio", "1.2.3"),
        ),
        ("oci://localhost:5000/istio", OciReference("oci://localhost:5000/istio", None)),
        (
            "oci://localhost:5000/a/b/istio:1.0.0-rc.1",
            OciReference("oci://localhost:5000/a/b/istio", "1.0.0-rc.1"),
        ),
        (
            f"oci://localhost:5000/istio@sha256:{'a' * 64}",
            OciReference("oci://localhost:5000/istio", None, f"sha256:{'a' * 64}"),
        ),
        (
            f"oci://localhost:5000/istio:1.2@sha256:{'a' * 64}",
            OciReference("oci://localhost:5000/istio", "1.2", f"sha256:{'a' * 64}"),
        ),
    ],
)
def test_oci_references_are_split_into_repository_and_version(
    source: str, expected: OciReference
) -> None:
    assert parse_oci_reference(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        "oci://registry.example.com",
        "oci://host/",
        "oci://host/:1.0",
        "oci://host/chart@sha256:abc",
        "oci://host/chart:1.0@md5:0123",
    ],
)
def test_malformed_oci_references_are_rejected(source: str) -> None:
    with pytest.raises(ChartError, match=source):
        parse_oci_reference(source)


def test_credentials_in_an_oci_reference_are_refused_without_echoing_them() -> None:
    with pytest.raises(ChartError) as caught:
        parse_oci_reference("oci://robot:s3cret@registry.example.com/charts/istio:1.0")
    assert "credentials in the reference are not supported" in str(caught.value)
    assert "s3cret" not in str(caught.value)
    assert "oci://registry.example.com/charts/istio:1.0" in str(caught.value)


async def test_unreachable_oci_registry_is_reported(tmp_path: Path) -> None:
    source = f"oci://127.0.0.1:{closed_port()}/charts/demo:1.0.0"
    with pytest.raises(ChartError, match=rf"{source}: pull failed: .*connection refused"):
        await ChartCache(tmp_path / "cache").fetch(source)
    assert cache_entries(tmp_path / "cache") == []


async def test_unsupported_scheme_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ChartError, match="unsupported scheme 'git'"):
        await ChartCache(tmp_path).fetch("git://github.com/kyma-project/kyma")
