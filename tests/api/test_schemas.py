"""Request bodies read like Go's encoding/json read them: field names case-insensitively (exact
spelling first), unknown fields ignored; identifiers that end up in URLs stay URL-safe."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from reconciler.api.convert import spec_from
from reconciler.api.schemas import ClusterIn
from tests.api.support import cluster_body


def test_field_names_match_case_insensitively_exact_spelling_first() -> None:
    body = cluster_body("rt-case", kubeconfig_key="KubeConfig")
    body["RUNTIMEID"] = "ignored-because-exact-wins"
    body["kymaconfig"] = body.pop("kymaConfig")
    body["kymaconfig"]["COMPONENTS"] = body["kymaconfig"].pop("components")
    body["unknownField"] = {"anything": 1}
    parsed = ClusterIn.model_validate(body)
    assert parsed.runtimeID == "rt-case"
    assert parsed.kubeconfig.startswith("apiVersion")
    assert [c.component for c in parsed.kymaConfig.components] == ["cluster-essentials", "istio"]


def test_accepted_body_becomes_the_engine_spec() -> None:
    spec = spec_from(ClusterIn.model_validate(cluster_body("rt-spec")))
    assert spec.runtime_id == "rt-spec"
    assert spec.metadata.shoot_name == "shoot-rt-spec"
    assert spec.kyma_config.components[0].url == "file:///charts/cluster-essentials"
    assert spec.kyma_config.components[0].configuration[1].secret


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("runtimeID",), "a/b"),
        (("runtimeID",), ""),
        (("kymaConfig", "components", 0, "component"), "../etc"),
        (("kymaConfig", "components", 0, "namespace"), "Not_A_Namespace"),
        (("kymaConfig", "version"), ""),
    ],
)
def test_identifiers_that_reach_urls_or_clusters_are_checked(
    path: tuple[object, ...], value: str
) -> None:
    body = cluster_body("rt")
    target = body
    for key in path[:-1]:
        target = target[key]  # type: ignore[index]
    target[path[-1]] = value  # type: ignore[index]
    with pytest.raises(ValidationError):
        ClusterIn.model_validate(body)


def test_go_null_for_an_optional_list_or_object_reads_as_empty() -> None:
    body = cluster_body("rt-null")
    body["kymaConfig"]["administrators"] = None
    body["kymaConfig"]["components"][0]["configuration"] = None
    body["metadata"] = None
    parsed = ClusterIn.model_validate(body)
    assert parsed.kymaConfig.administrators == []
    assert parsed.kymaConfig.components[0].configuration == []
    assert parsed.metadata.shootName == ""
    body["kymaConfig"]["components"] = None
    assert ClusterIn.model_validate(body).kymaConfig.components == []


def test_null_for_a_required_field_is_still_refused() -> None:
    body = cluster_body("rt-null")
    body["kymaConfig"]["version"] = None
    with pytest.raises(ValidationError):
        ClusterIn.model_validate(body)
