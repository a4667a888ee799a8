"""The test bed stores what an upstream apiserver stores: the behaviours the suite relies on.

Each case is a fact of upstream Kubernetes that a misbuilt test bed once broke or could break:
kube-apiserver 1.20 built with a newer Go than its own read `""` in a typed custom-resource
field as null and refused it (kubernetes/kubernetes#99804). A real apiserver keeps every zero
value a client sends in a typed field, prunes only unknown fields, still refuses a real type
mismatch, and stores any Unicode.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from lightkube import ApiError, AsyncClient
from lightkube.generic_resource import GenericNamespacedResource, create_namespaced_resource
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.core_v1 import ConfigMap

from reconciler.util.polling import poll_until

GROUP = "conformance.testbed.example.com"
PLURAL = "probes"
STRING = {"type": "string"}
PROBE_SPEC: dict[str, Any] = {
    "type": "object",
    "properties": {
        "s": STRING,
        "n": {"type": "integer"},
        "replicas": {"type": "integer", "format": "int32"},
        "b": {"type": "boolean"},
        "f": {"type": "number"},
        "labels": {"type": "object", "additionalProperties": STRING},
        "items": {"type": "array", "items": STRING},
        "nested": {"type": "object", "properties": {"s": STRING, "n": {"type": "integer"}}},
        "text": STRING,
    },
}
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "probe", "kind": "Probe"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "properties": {"spec": PROBE_SPEC}}
                },
            }
        ],
    },
}
ZEROS: dict[str, Any] = {
    "s": "",
    "n": 0,
    "replicas": 0,
    "b": False,
    "f": 0.0,
    "labels": {"traffic.sidecar.istio.io/includeInboundPorts": ""},
    "items": [""],
    "nested": {"s": "", "n": 0},
}
EMPTIES: dict[str, Any] = {"labels": {}, "items": [], "nested": {}}
NON_BMP = "emoji 😀, clef 𝄞, CJK extension B 𠀀"


@pytest.fixture(scope="module")
def probe() -> type[GenericNamespacedResource]:
    return create_namespaced_resource(GROUP, "v1", "Probe", PLURAL)


@pytest.fixture
async def crd(kube_client: AsyncClient) -> None:
    """The CRD, Established (created once per test-bed cluster, re-applied unchanged after)."""
    await kube_client.apply(
        CustomResourceDefinition.from_dict(copy.deepcopy(CRD)), field_manager="test", force=True
    )

    async def established() -> bool:
        live = await kube_client.get(CustomResourceDefinition, f"{PLURAL}.{GROUP}")
        conditions = live.status.conditions if live.status else None
        return any(c.type == "Established" and c.status == "True" for c in conditions or [])

    await poll_until(established, timeout=30, what=f"CRD {PLURAL}.{GROUP} to be Established")


def _probe(cls: type[GenericNamespacedResource], name: str, spec: dict[str, Any]) -> Any:
    return cls.from_dict(
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Probe",
            "metadata": {"name": name},
            "spec": copy.deepcopy(spec),
        }
    )


@pytest.mark.usefixtures("crd")
@pytest.mark.parametrize("spec", [ZEROS, EMPTIES], ids=["zero-values", "empty-maps-and-lists"])
async def test_zero_values_in_typed_fields_are_stored_by_create(
    kube_client: AsyncClient,
    namespace: str,
    probe: type[GenericNamespacedResource],
    spec: dict[str, Any],
) -> None:
    await kube_client.create(_probe(probe, "created", spec), namespace=namespace)

    stored = await kube_client.get(probe, "created", namespace=namespace)
    assert stored["spec"] == spec
    assert type(stored["spec"].get("n", 0)) is int


@pytest.mark.usefixtures("crd")
@pytest.mark.parametrize("spec", [ZEROS, EMPTIES], ids=["zero-values", "empty-maps-and-lists"])
async def test_zero_values_in_typed_fields_are_stored_by_server_side_apply(
    kube_client: AsyncClient,
    namespace: str,
    probe: type[GenericNamespacedResource],
    spec: dict[str, Any],
) -> None:
    first = await kube_client.apply(
        _probe(probe, "applied", spec), namespace=namespace, field_manager="test", force=True
    )
    again = await kube_client.apply(
        _probe(probe, "applied", spec), namespace=namespace, field_manager="test", force=True
    )

    assert first["spec"] == spec
    assert again.metadata.resourceVersion == first.metadata.resourceVersion  # nothing changed


@pytest.mark.usefixtures("crd")
async def test_unknown_fields_of_a_typed_custom_resource_are_pruned(
    kube_client: AsyncClient, namespace: str, probe: type[GenericNamespacedResource]
) -> None:
    spec = {"s": "kept", "unknown": "dropped", "nested": {"n": 1, "extra": {"a": 1}}}
    await kube_client.create(_probe(probe, "pruned", spec), namespace=namespace)

    stored = await kube_client.get(probe, "pruned", namespace=namespace)
    assert stored["spec"] == {"s": "kept", "nested": {"n": 1}}


@pytest.mark.usefixtures("crd")
@pytest.mark.parametrize(
    ("field", "value", "expected_type"),
    [("s", 5, "string"), ("n", "five", "integer"), ("b", "", "boolean")],
)
async def test_a_value_of_the_wrong_type_is_still_refused(
    kube_client: AsyncClient,
    namespace: str,
    probe: type[GenericNamespacedResource],
    field: str,
    value: Any,
    expected_type: str,
) -> None:
    with pytest.raises(ApiError) as refused:
        await kube_client.create(_probe(probe, "wrong", {field: value}), namespace=namespace)

    assert refused.value.status.code == 422
    assert f"spec.{field} in body must be of type {expected_type}" in str(
        refused.value.status.message
    )


@pytest.mark.usefixtures("crd")
async def test_null_in_a_field_that_is_not_nullable_is_pruned(
    kube_client: AsyncClient, namespace: str, probe: type[GenericNamespacedResource]
) -> None:
    """Kubernetes 1.20+ prunes such nulls before defaulting (not an error, not a `""`)."""
    spec = {"s": None, "n": None, "b": False, "nested": {"s": None}}
    await kube_client.create(_probe(probe, "nulls", spec), namespace=namespace)

    stored = await kube_client.get(probe, "nulls", namespace=namespace)
    assert stored["spec"] == {"b": False, "nested": {}}


@pytest.mark.usefixtures("crd")
async def test_characters_outside_the_basic_multilingual_plane_round_trip(
    kube_client: AsyncClient, namespace: str, probe: type[GenericNamespacedResource]
) -> None:
    await kube_client.create(_probe(probe, "unicode", {"text": NON_BMP}), namespace=namespace)
    await kube_client.create(
        ConfigMap.from_dict({"metadata": {"name": "unicode"}, "data": {"text": NON_BMP}}),
        namespace=namespace,
    )

    assert (await kube_client.get(probe, "unicode", namespace=namespace))["spec"] == {
        "text": NON_BMP
    }
    config_map = await kube_client.get(ConfigMap, "unicode", namespace=namespace)
    assert config_map.data == {"text": NON_BMP}
