"""From rendered template text to an ordered list of `KubeObject`s, the same for every renderer.

Both renderers hand over (source path, text) pairs; this module splits them the way Helm splits
manifests, drops what is not applied (NOTES.txt, partials, empty documents, Helm hooks outside
`crds/`), flattens `kind: List` / `<Kind>List` documents into their items (Helm's and kubectl's
resource builders do), checks that each object is a Kubernetes object that server-side apply can
address (a name, not only a `generateName`) and orders the result: CRDs first, then Helm's
install kind order, then by template path and name. It parses; it does not transform objects.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from reconciler.charts import yamlio
from reconciler.errors import ChartError
from reconciler.model.kube_object import KubeObject

HOOK_ANNOTATION = "helm.sh/hook"

# Helm's releaseutil.InstallOrder; kinds not listed sort after these, alphabetically.
INSTALL_ORDER: tuple[str, ...] = (
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
)
_RANK = {kind: rank for rank, kind in enumerate(INSTALL_ORDER)}
_SEPARATOR = re.compile(r"(?:^|\s*\n)---\s*")  # Helm's releaseutil.SplitManifests
_SOURCE = re.compile(r"\A# Source: (.+)\n?")
_CRDS_DIR = re.compile(r"[^/]+/(?:charts/[^/]+/)*crds/")  # `chart/crds/`, `chart/charts/sub/crds/`

Document = tuple[str, str]
"""(source path such as `mychart/templates/deployment.yaml`, text of one YAML document)."""


def split_documents(source: str, text: str) -> list[Document]:
    """Split one rendered file into its documents, as Helm does.

    Helm trims each document and writes it into the release manifest followed by a newline,
    which is what it applies: a block scalar (`data: {conf: |`) that ends a document keeps its
    final line break. Without the newline it came out one character short of what Helm and
    `kubectl apply` store.
    """
    return [(source, part.strip() + "\n") for part in _SEPARATOR.split(text) if part.strip()]


def split_cli_output(text: str) -> list[Document]:
    """Split `helm template` output, attributing each document to its `# Source:` file."""
    documents: list[Document] = []
    source = "<helm template output>"
    for part in _SEPARATOR.split(text):
        header = _SOURCE.match(part)
        if header:
            source = header.group(1).strip()
            part = part[header.end() :]
        if part.strip():
            documents.append((source, part.strip() + "\n"))  # as `split_documents`
    return documents


def is_rendered_manifest(path: str) -> bool:
    """Whether a rendered template file holds manifests (not NOTES.txt, not a `_partial`)."""
    name = path.rsplit("/", 1)[-1]
    return not name.endswith("NOTES.txt") and not name.startswith("_")


def to_objects(chart: Path, documents: Iterable[Document]) -> list[KubeObject]:
    """Parse, filter and order the documents of one chart rendering."""
    entries: list[tuple[str, KubeObject]] = []
    for source, text in documents:
        raw = _load(chart, source, text)
        if raw is None:
            continue
        if _is_hook(raw) and not _CRDS_DIR.match(source):
            # Helm sorts hooks out of templates by the document's annotations; it installs the
            # files of crds/ as they are, even those still annotated for Helm 2's `crd-install`
            continue
        for item in _flatten(chart, source, raw):
            _check_object(chart, source, item)
            entries.append((source, KubeObject(item)))
    entries.sort(key=_order_key)
    return [obj for _, obj in entries]


def _load(chart: Path, source: str, text: str) -> dict[str, Any] | None:
    try:
        raw = yamlio.load(text)
    except yaml.YAMLError as exc:
        raise ChartError(
            f"chart {chart}: template {source} renders invalid YAML{yamlio.where(exc)}"
        ) from exc
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ChartError(
            f"chart {chart}: template {source} renders a {type(raw).__name__}, "
            "not a Kubernetes object"
        )
    return raw


def _flatten(chart: Path, source: str, raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects of one document: the items of a list (`v1 List`, `ConfigMapList`, ...; lists
    nest), else the document itself. Like Helm's kube client, which decodes a document whose
    kind ends in `List` and that has `items` as a list, then applies each item."""
    items = raw.get("items")
    if not str(raw.get("kind", "")).endswith("List") or not isinstance(items, list):
        return [raw]
    flat: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise ChartError(
                f"chart {chart}: template {source} renders a {raw['kind']} whose item {index} "
                f"is a {type(item).__name__}, not a Kubernetes object"
            )
        flat += _flatten(chart, source, item)
    return flat


def _is_hook(raw: dict[str, Any]) -> bool:
    metadata = raw.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return isinstance(annotations, dict) and HOOK_ANNOTATION in annotations


def _check_object(chart: Path, source: str, raw: dict[str, Any]) -> None:
    missing = [field for field in ("apiVersion", "kind") if not raw.get(field)]
    metadata = raw.get("metadata")
    if not isinstance(metadata, dict) or not metadata.get("name"):
        if isinstance(metadata, dict) and metadata.get("generateName") and not missing:
            # `helm install` creates such an object, but every upgrade fails on it ("resource
            # name may not be empty"); server-side apply needs the name from the start
            raise ChartError(
                f"chart {chart}: template {source} renders {raw['kind']} "
                f"{metadata['generateName']!r}... with metadata.generateName and no name: "
                "objects are server-side applied by name, so give it metadata.name"
            )
        missing.append("metadata.name")
    if missing:
        raise ChartError(
            f"chart {chart}: template {source} renders an object without {', '.join(missing)}"
        )


def _order_key(entry: tuple[str, KubeObject]) -> tuple[int, str, str, str, str]:
    source, obj = entry
    rank = -1 if obj.is_crd else _RANK.get(obj.kind, len(INSTALL_ORDER))
    return (rank, obj.kind, source, obj.namespace, obj.name)
