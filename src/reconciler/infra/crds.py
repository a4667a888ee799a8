"""The CustomResourceDefinitions of `Runtime` and `GardenerCluster`, generated from the models in
`model/infrastructure.py` by the generator operator mode uses too (`kube/crdgen.py`)."""

from __future__ import annotations

from typing import Any

from reconciler.kube.crdgen import crd
from reconciler.model.infrastructure import (
    GARDENER_CLUSTER_COLUMNS,
    GROUP,
    RUNTIME_COLUMNS,
    VERSION,
    GardenerClusterSpec,
    GardenerClusterStatus,
    RuntimeSpec,
    RuntimeStatus,
)


def all_crds() -> list[dict[str, Any]]:
    kinds = (
        ("Runtime", "runtimes", RuntimeSpec, RuntimeStatus, RUNTIME_COLUMNS),
        (
            "GardenerCluster",
            "gardenerclusters",
            GardenerClusterSpec,
            GardenerClusterStatus,
            GARDENER_CLUSTER_COLUMNS,
        ),
    )
    return [
        crd(
            group=GROUP,
            version=VERSION,
            kind=kind,
            plural=plural,
            spec=spec,
            status=status,
            columns=columns,
        )
        for kind, plural, spec, status, columns in kinds
    ]
