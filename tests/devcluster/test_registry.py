"""The test bed's OCI registry is a real one: helm pushes to it and it serves the OCI API."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx

from reconciler.devcluster.processes import is_running
from reconciler.devcluster.registry import OciRegistry
from reconciler.paths import find_binary
from tests.charts.support import FIXTURE_CHARTS


def test_helm_pushes_a_chart_that_the_registry_lists(oci_registry: str, tmp_path: Path) -> None:
    helm = find_binary("helm")
    assert helm is not None
    subprocess.run(
        [str(helm), "package", str(FIXTURE_CHARTS / "plain"), "-d", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            str(helm),
            "push",
            str(tmp_path / "plain-0.1.0.tgz"),
            f"oci://{oci_registry}/devcluster-test",
            "--plain-http",
        ],
        check=True,
        capture_output=True,
    )
    tags = httpx.get(f"http://{oci_registry}/v2/devcluster-test/plain/tags/list").json()
    assert tags == {"name": "devcluster-test/plain", "tags": ["0.1.0"]}


async def test_a_registry_answers_on_loopback_until_it_is_stopped(tmp_path: Path) -> None:
    registry = OciRegistry(tmp_path, die_with_parent=True)
    await registry.start()
    pid = registry.pid
    try:
        assert registry.host.startswith("127.0.0.1:")
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"{registry.url}/v2/")).status_code == 200
    finally:
        await registry.stop()
    assert not is_running(pid, str(tmp_path / "config.yml"))
