"""Where a module's objects come from: lifecycle-manager's ImageSpec and OCM descriptors map to
OCI links of their raw-manifest layers."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.model.lifecycle import Module
from reconciler.operator.catalog.resolve import resolve
from reconciler.operator.catalog.sources import descriptor_source, install_link

BLOB = f"sha256:{'b' * 64}"


@pytest.mark.parametrize(
    ("name", "source", "expected"),
    [
        ("chart", {"type": "helm-chart", "url": "oci://r/c:1"}, ("oci://r/c:1", False)),
        ("rawManifest", {"type": "raw-manifest", "url": "/m.yaml"}, ("/m.yaml", True)),
        (
            "raw-manifest",
            {
                "type": "oci-ref",
                "repo": "registry:5000/prod/component-descriptors",
                "name": "kyma-project.io/module/x",
                "ref": BLOB,
            },
            (
                f"oci://registry:5000/prod/component-descriptors/kyma-project.io/module/x@{BLOB}",
                True,
            ),
        ),
        ("raw-manifest", {"type": "oci-ref", "repo": "r/x", "ref": "1.0"}, ("oci://r/x:1.0", True)),
        ("chart", {"type": "helm-chart"}, (None, False)),
    ],
)
def test_install_sources_map_to_one_link(
    name: str, source: dict[str, Any], expected: tuple[str | None, bool]
) -> None:
    assert install_link(name, source) == expected


def component(resource: dict[str, Any]) -> dict[str, Any]:
    return {
        "component": {
            "name": "kyma-project.io/module/x",
            "repositoryContexts": [
                {"type": "OCIRegistry", "baseUrl": "old.example.com/dev"},
                {"type": "OCIRegistry", "baseUrl": "registry:5000/prod"},
            ],
            "resources": [{"name": "controller-image", "type": "ociImage"}, resource],
        }
    }


@pytest.mark.parametrize(
    ("resource", "expected"),
    [
        (
            {"name": "raw-manifest", "access": {"type": "localBlob", "localReference": BLOB}},
            (
                "rawManifest",
                f"oci://registry:5000/prod/component-descriptors/kyma-project.io/module/x@{BLOB}",
            ),
        ),
        (
            {"name": "raw-manifest", "access": {"type": "ociArtifact", "imageReference": "r/m:1"}},
            ("rawManifest", "oci://r/m:1"),
        ),
        (
            {
                "name": "x",
                "type": "helmChart",
                "access": {"type": "ociRegistry/v1", "imageReference": "r/c:2"},
            },
            ("chart", "oci://r/c:2"),
        ),
        (
            {
                "name": "x",
                "type": "helmChart",
                "access": {"type": "localBlob", "localReference": BLOB},
            },
            None,
        ),
    ],
)
def test_ocm_descriptors_name_their_module_layer(
    resource: dict[str, Any], expected: tuple[str, str] | None
) -> None:
    assert descriptor_source(component(resource)) == expected


def test_a_template_with_only_a_descriptor_resolves_to_its_raw_manifest_layer() -> None:
    template = {
        "metadata": {"name": "x-1.0.0"},
        "spec": {
            "moduleName": "x",
            "version": "1.0.0",
            "channel": "regular",
            "descriptor": component(
                {
                    "name": "raw-manifest",
                    "access": {"type": "ociArtifact", "imageReference": "r/m:1"},
                }
            ),
        },
    }
    resolved = resolve(Module(name="x"), "regular", [], [template])
    assert (resolved.install, resolved.source_type, resolved.link) == (
        "rawManifest",
        "raw-manifest",
        "oci://r/m:1",
    )


@pytest.mark.parametrize(
    ("context", "access", "expected"),
    [
        (  # the repository's subPath is part of the base, as the lifecycle manager reads it
            {"baseUrl": "registry:5000", "subPath": "prod"},
            {"type": "localOciBlob/v1", "localReference": BLOB},
            f"oci://registry:5000/prod/component-descriptors/kyma-project.io/module/x@{BLOB}",
        ),
        (  # no localReference: the component's version
            {"baseUrl": "oci://registry:5000/prod"},
            {"type": "localBlob"},
            "oci://registry:5000/prod/component-descriptors/kyma-project.io/module/x:1.0.0",
        ),
        (  # the sha256-digest name mapping is not supported: no link
            {"baseUrl": "registry:5000", "componentNameMapping": "sha256-digest"},
            {"type": "localBlob", "localReference": BLOB},
            None,
        ),
    ],
)
def test_local_blobs_are_found_where_ocm_stores_them(
    context: dict[str, Any], access: dict[str, Any], expected: str | None
) -> None:
    descriptor = {
        "component": {
            "name": "kyma-project.io/module/x",
            "version": "1.0.0",
            "repositoryContexts": [{"type": "OCIRegistry", **context}],
            "resources": [{"name": "raw-manifest", "type": "yaml", "access": access}],
        }
    }
    found = descriptor_source(descriptor)
    assert (found[1] if found else None) == expected
