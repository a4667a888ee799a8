"""OCI chart sources against a real registry (Debian's docker-registry, plain HTTP on loopback):
charts pushed with `helm push` are pulled by tag and by digest and cached by content."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import yaml

from reconciler.charts.sources import ChartCache
from reconciler.devcluster.registry import OciRegistry
from reconciler.errors import ChartError
from tests.charts.support import FIXTURE_CHARTS
from tests.helpers.oci import push_chart

PLAIN = FIXTURE_CHARTS / "plain"


def chart_name(directory: Path) -> str:
    return str(yaml.safe_load((directory / "Chart.yaml").read_text())["name"])


@pytest.fixture
def repository() -> str:
    return f"charts-{uuid.uuid4().hex[:8]}"


async def test_a_chart_pushed_with_helm_is_pulled_from_a_loopback_registry_without_setup(
    oci_registry: str, repository: str, tmp_path: Path
) -> None:
    push_chart(oci_registry, PLAIN, repository, tmp_path / "pkg")
    chart = await ChartCache(tmp_path / "cache").fetch(
        f"oci://{oci_registry}/{repository}/plain:0.1.0"
    )
    assert chart_name(chart) == "plain"


async def test_tag_digest_and_tag_at_digest_share_one_cache_entry(
    oci_registry: str, repository: str, tmp_path: Path
) -> None:
    digest = push_chart(oci_registry, PLAIN, repository, tmp_path / "pkg")
    cache = ChartCache(tmp_path / "cache")
    base = f"oci://{oci_registry}/{repository}/plain"
    by_tag = await cache.fetch(f"{base}:0.1.0")
    assert await cache.fetch(f"{base}@{digest}") == by_tag
    assert await cache.fetch(f"{base}:0.1.0@{digest}") == by_tag
    entries = [p for p in (tmp_path / "cache").iterdir() if p.is_dir() and p.name[0] != "."]
    assert entries == [by_tag.parent]


async def test_a_pinned_reference_is_served_from_the_cache_once_the_registry_is_gone(
    repository: str, tmp_path: Path
) -> None:
    registry = OciRegistry(tmp_path / "registry", die_with_parent=True)
    await registry.start()
    try:
        digest = push_chart(registry.host, PLAIN, repository, tmp_path / "pkg")
        source = f"oci://{registry.host}/{repository}/plain@{digest}"
        first = await ChartCache(tmp_path / "cache").fetch(source)
    finally:
        await registry.stop()
    assert await ChartCache(tmp_path / "cache").fetch(source) == first


@pytest.mark.parametrize("missing", [":9.9.9", f"@sha256:{'0' * 64}"])
async def test_a_version_or_digest_the_registry_lacks_is_an_error_naming_the_reference(
    oci_registry: str, repository: str, tmp_path: Path, missing: str
) -> None:
    push_chart(oci_registry, PLAIN, repository, tmp_path / "pkg")
    source = f"oci://{oci_registry}/{repository}/plain{missing}"
    with pytest.raises(ChartError, match=rf"{source}: pull failed: .*not found"):
        await ChartCache(tmp_path / "cache").fetch(source)
