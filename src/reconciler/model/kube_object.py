"""A Kubernetes object as a plain dict, with the few accessors everyone needs.

Rendered manifests, live objects and applied inventories are all `KubeObject`s; keeping the raw
dict avoids lossy round trips through typed models (custom resources have no model anyway).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

Body = dict[str, Any]
"""An object as the apiserver sends and takes it (JSON as a dict): what the controllers and the
watches pass around; `KubeObject` wraps one where its accessors help."""


class ObjectKey(NamedTuple):
    """Identity of an object in a cluster: what pruning and inventories compare."""

    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{kind.lower()} {where}"


@dataclass(frozen=True)
class KubeObject:
    """One manifest. `raw` is the object exactly as it will be sent (or was received)."""

    raw: dict[str, Any]

    @property
    def api_version(self) -> str:
        return str(self.raw.get("apiVersion", ""))

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def kind(self) -> str:
        return str(self.raw.get("kind", ""))

    @property
    def metadata(self) -> dict[str, Any]:
        meta = self.raw.setdefault("metadata", {})
        assert isinstance(meta, dict)
        return meta

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace") or "")

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.metadata.get("labels") or {})

    @property
    def annotations(self) -> dict[str, str]:
        return dict(self.metadata.get("annotations") or {})

    @property
    def key(self) -> ObjectKey:
        # read directly, not through the properties: a no-op run computes keys of thousands
        # of objects, and this was a tenth of its CPU through five property calls each
        raw = self.raw
        meta = raw.get("metadata") or {}
        return ObjectKey(
            str(raw.get("apiVersion", "")).rpartition("/")[0],
            str(raw.get("kind", "")),
            str(meta.get("namespace") or ""),
            str(meta.get("name", "")),
        )

    @property
    def is_crd(self) -> bool:
        return self.kind == "CustomResourceDefinition" and self.group == "apiextensions.k8s.io"

    @property
    def is_namespace(self) -> bool:
        return self.kind == "Namespace" and self.group == ""

    def __str__(self) -> str:
        return str(self.key)
