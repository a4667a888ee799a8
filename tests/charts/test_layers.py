"""Raw-manifest layers pulled from a real registry (pushed with oras): the layer forms module
authors publish, clear errors for artifacts that hold no single YAML layer, and caching."""

from __future__ import annotations

import hashlib
import io
import tarfile
import uuid
from pathlib import Path

import oras.client
import pytest

from reconciler.charts.layers import RawManifestLayers
from reconciler.devcluster.registry import OciRegistry
from reconciler.errors import ChartError
from tests.charts.support import FIXTURE_CHARTS
from tests.helpers.oci import push_chart, push_layer

CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"


@pytest.fixture
def repo() -> str:
    return f"layers-{uuid.uuid4().hex[:8]}"


def tar_gz(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


async def test_a_yaml_layer_is_read_by_tag_and_by_manifest_digest(
    oci_registry: str, repo: str, tmp_path: Path
) -> None:
    file = tmp_path / "module.yaml"
    file.write_text(CONFIGMAP.format(name="one"))
    digest = push_layer(oci_registry, f"{repo}/module:1.0.0", file)
    layers = RawManifestLayers()
    assert await layers.text(f"oci://{oci_registry}/{repo}/module:1.0.0") == file.read_text()
    assert await layers.text(f"oci://{oci_registry}/{repo}/module@{digest}") == file.read_text()


async def test_a_gzipped_tar_layer_gives_its_yaml_files_in_name_order(
    oci_registry: str, repo: str, tmp_path: Path
) -> None:
    archive = tmp_path / "module.tar.gz"
    archive.write_bytes(
        tar_gz(
            {"b.yaml": CONFIGMAP.format(name="b"), "a.yml": CONFIGMAP.format(name="a"), "x": "no"}
        )
    )
    push_layer(
        oci_registry, f"{repo}/module:1.0.0", archive, "application/vnd.oci.image.layer.v1.tar+gzip"
    )
    text = await RawManifestLayers().text(f"oci://{oci_registry}/{repo}/module:1.0.0")
    assert text == CONFIGMAP.format(name="a") + "\n---\n" + CONFIGMAP.format(name="b")


async def test_a_helm_chart_linked_as_raw_manifest_is_refused_with_advice(
    oci_registry: str, repo: str, tmp_path: Path
) -> None:
    push_chart(oci_registry, FIXTURE_CHARTS / "plain", repo, tmp_path)
    link = f"oci://{oci_registry}/{repo}/plain:0.1.0"
    with pytest.raises(ChartError, match=rf"raw manifest {link}: is a Helm chart; link it as"):
        await RawManifestLayers().text(link)


async def test_an_artifact_without_one_yaml_layer_is_refused_naming_its_layers(
    oci_registry: str, repo: str, tmp_path: Path
) -> None:
    files = []
    for name in ("one.bin", "two.bin"):
        (tmp_path / name).write_bytes(b"\0")
        files.append(f"{tmp_path / name}:application/octet-stream")
    oras.client.OrasClient(hostname=oci_registry, insecure=True).push(
        target=f"{oci_registry}/{repo}/binaries:1", files=files, disable_path_validation=True
    ).raise_for_status()
    link = f"oci://{oci_registry}/{repo}/binaries:1"
    with pytest.raises(ChartError, match=r"expected one YAML layer, the artifact has 2 \(app"):
        await RawManifestLayers().text(link)


async def test_a_pinned_layer_is_served_from_memory_once_the_registry_is_gone(
    repo: str, tmp_path: Path
) -> None:
    registry = OciRegistry(tmp_path / "registry", die_with_parent=True)
    await registry.start()
    file = tmp_path / "module.yaml"
    file.write_text(CONFIGMAP.format(name="one"))
    layers = RawManifestLayers()
    try:
        push_layer(registry.host, f"{repo}/module:1.0.0", file)
        blob = f"sha256:{hashlib.sha256(file.read_bytes()).hexdigest()}"
        by_tag = f"oci://{registry.host}/{repo}/module:1.0.0"
        by_blob = f"oci://{registry.host}/{repo}/module@{blob}"  # the layer itself
        assert await layers.text(by_tag) == await layers.text(by_blob) == file.read_text()
    finally:
        await registry.stop()
    assert await layers.text(by_tag) == file.read_text()
    assert await layers.text(by_blob) == file.read_text()
    with pytest.raises(ChartError, match="registry unreachable"):
        await layers.text(f"oci://{registry.host}/{repo}/module")  # unpinned: asks again
