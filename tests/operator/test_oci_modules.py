"""Modules whose ModuleTemplates point at a real OCI registry: a chart pushed with `helm push`,
a raw-manifest layer pushed with `oras`, and an OCM descriptor whose raw-manifest resource is a
local blob of the component's repository (and one as the lifecycle manager also finds them: a
registry sub-path, the component's version for a missing `localReference`, a tar layer), all
installed on the remote cluster."""

from __future__ import annotations

import hashlib
import tarfile
import uuid
from pathlib import Path
from typing import Any

from reconciler.model.lifecycle import API_VERSION
from tests.helpers.oci import push_chart, push_layer
from tests.operator import modules
from tests.operator.conftest import World


def configmap_yaml(name: str, version: str) -> str:
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
        f'data:\n  version: "{version}"\n'
    )


def template(world: World, module: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ModuleTemplate",
        "metadata": {"name": f"{module}-1.0.0", "namespace": world.namespace},
        "spec": {"moduleName": module, "version": "1.0.0", **spec},
    }


async def test_chart_raw_layer_and_ocm_blob_modules_are_installed_from_the_registry(
    world: World, oci_registry: str, tmp_path: Path
) -> None:
    repo = f"modules-{uuid.uuid4().hex[:8]}"
    chart = modules.module_chart(world.charts, "alpha", "1.0.0", ["alpha-a"])
    push_chart(oci_registry, chart, repo, tmp_path / "pkg")
    raw = tmp_path / "beta.yaml"
    raw.write_text(configmap_yaml("beta-a", "1.0.0"))
    push_layer(oci_registry, f"{repo}/beta:1.0.0", raw)
    gamma = tmp_path / "gamma.yaml"
    gamma.write_text(configmap_yaml("gamma-a", "1.0.0"))
    component = "kyma-project.io/module/gamma"
    push_layer(oci_registry, f"{repo}/component-descriptors/{component}:1.0.0", gamma)
    blob = f"sha256:{hashlib.sha256(gamma.read_bytes()).hexdigest()}"
    descriptor = {
        "component": {
            "name": component,
            "version": "1.0.0",
            "repositoryContexts": [
                {"type": "OCIRegistry", "baseUrl": f"{oci_registry}/{repo}"},
            ],
            "resources": [
                {
                    "name": "raw-manifest",
                    "type": "yaml",
                    "version": "1.0.0",
                    "access": {"type": "localBlob", "localReference": blob},
                }
            ],
        }
    }
    # epsilon as modulectl publishes into a registry with a sub-path: the repository context's
    # `subPath`, no `localReference` (the component's version names the artifact), a tar layer
    epsilon_dir = tmp_path / "epsilon"
    epsilon_dir.mkdir()
    (epsilon_dir / "raw-manifest.yaml").write_text(configmap_yaml("epsilon-a", "1.0.0"))
    epsilon_tar = tmp_path / "epsilon.tar"
    with tarfile.open(epsilon_tar, "w") as tar:
        tar.add(epsilon_dir / "raw-manifest.yaml", arcname="raw-manifest.yaml")
    epsilon_component = "kyma-project.io/module/epsilon"
    push_layer(
        oci_registry,
        f"{repo}/component-descriptors/{epsilon_component}:1.0.0",
        epsilon_tar,
        media_type="application/x-tar",
    )
    epsilon_descriptor = {
        "component": {
            "name": epsilon_component,
            "version": "1.0.0",
            "repositoryContexts": [
                {"type": "OCIRegistry", "baseUrl": oci_registry, "subPath": repo},
            ],
            "resources": [
                {
                    "name": "raw-manifest",
                    "type": "directoryTree",
                    "version": "1.0.0",
                    "access": {"type": "localBlob", "mediaType": "application/x-tar"},
                }
            ],
        }
    }
    link = f"oci://{oci_registry}/{repo}"
    for body in (
        template(world, "alpha", {"resources": [{"name": "chart", "link": f"{link}/alpha:1.0.0"}]}),
        template(
            world, "beta", {"resources": [{"name": "rawManifest", "link": f"{link}/beta:1.0.0"}]}
        ),
        template(world, "gamma", {"descriptor": descriptor}),
        template(world, "epsilon", {"descriptor": epsilon_descriptor}),
        *(
            modules.release_meta(world.namespace, m, {"regular": "1.0.0"})
            for m in ("alpha", "beta", "gamma", "epsilon")
        ),
        modules.kubeconfig_secret(world.namespace, "oci", world.remote_kubeconfig),
    ):
        await world.control.apply(body)
    wanted = [{"name": m, "managed": True} for m in ("alpha", "beta", "gamma", "epsilon")]
    await world.control.apply(modules.kyma(world.namespace, "oci", "regular", wanted))

    await world.kyma_state("oci", "Ready")
    for name in ("alpha-a", "beta-a", "gamma-a", "epsilon-a"):
        configmap = await world.remote_configmap(name)
        assert configmap is not None, name
        assert configmap["data"]["version"] == "1.0.0"

    missing = f"{link}/delta:1.0.0"
    await world.control.apply(
        template(world, "delta", {"resources": [{"name": "rawManifest", "link": missing}]})
    )
    await world.control.apply(modules.release_meta(world.namespace, "delta", {"regular": "1.0.0"}))
    await world.control.apply(
        modules.kyma(
            world.namespace, "oci", "regular", [*wanted, {"name": "delta", "managed": True}]
        )
    )
    kyma = await world.kyma_state("oci", "Error")
    delta = next(m for m in kyma["status"]["modules"] if m["name"] == "delta")
    assert f"raw manifest {missing}: not found in the registry" in delta["message"]
