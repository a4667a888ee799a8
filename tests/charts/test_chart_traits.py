"""Traits of real-world charts, each from a small fixture chart: rendered as `helm upgrade
--install` would apply them, by both renderers (their parity over every fixture chart is
`test_render.test_sdk_and_cli_render_the_same_objects`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reconciler.charts.manifests import split_cli_output, split_documents, to_objects
from reconciler.charts.render import Capabilities, CliRenderer, Renderer, SdkRenderer
from reconciler.charts.values import chart_values
from reconciler.errors import ChartError
from reconciler.model.kube_object import KubeObject
from reconciler.paths import find_binary
from tests.charts.support import FIXTURE_CHARTS

pytestmark = pytest.mark.skipif(find_binary("helm") is None, reason="the helm CLI is not built")

NEW = Capabilities("v1.30.0")
CLUSTER_1_30 = Capabilities(
    "v1.30.0", ("policy/v1", "policy/v1/PodDisruptionBudget", "networking.k8s.io/v1/Ingress")
)


@pytest.fixture(scope="module")
def sdk() -> SdkRenderer:
    return SdkRenderer()


@pytest.fixture(params=["sdk", "cli"])
def renderer(request: pytest.FixtureRequest, sdk: SdkRenderer) -> Renderer:
    return sdk if request.param == "sdk" else CliRenderer()


async def render(
    renderer: Renderer,
    chart: str,
    overrides: dict[str, Any] | None = None,
    capabilities: Capabilities = NEW,
) -> dict[str, KubeObject]:
    path = FIXTURE_CHARTS / chart
    values = chart_values(path, profile=None, overrides=overrides or {})
    objects = await renderer.render(
        path, release="rel", namespace="ns", values=values, capabilities=capabilities
    )
    return {f"{obj.kind}/{obj.name}": obj for obj in objects}


async def test_list_documents_are_applied_as_their_items(renderer: Renderer) -> None:
    objects = await render(renderer, "list-documents")
    assert list(objects) == [
        "ServiceAccount/rel-robot",
        "ConfigMap/rel-first",
        "ConfigMap/rel-second",
    ]
    assert objects["ConfigMap/rel-first"].raw["data"] == {"order": "1"}


def test_a_list_item_that_is_not_an_object_names_the_template() -> None:
    text = "apiVersion: v1\nkind: List\nitems:\n  - just a string\n"
    with pytest.raises(ChartError, match=r"templates/list\.yaml renders a List whose item 0"):
        to_objects(Path("chart"), [("chart/templates/list.yaml", text)])


def test_lists_nest_and_their_items_are_checked_like_documents() -> None:
    inner = "{apiVersion: v1, kind: ConfigMapList, items: [{apiVersion: v1, kind: ConfigMap}]}"
    text = f"apiVersion: v1\nkind: List\nitems:\n  - {inner}\n"
    with pytest.raises(
        ChartError, match=r"templates/list\.yaml renders an object without metadata"
    ):
        to_objects(Path("chart"), [("chart/templates/list.yaml", text)])


def test_a_block_scalar_that_ends_a_document_keeps_its_line_break_as_helm_applies_it() -> None:
    """Helm applies `strings.TrimSpace(document) + "\\n"` (its release manifest), kubectl the
    lines up to the separator: both store `x\\n`, not `x`."""
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  conf: |\n    x\n\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata:\n  conf: |\n    y"
    )
    objects = to_objects(Path("chart"), split_documents("chart/templates/cm.yaml", text))
    assert [obj.raw["data"]["conf"] for obj in objects] == ["x\n", "y\n"]
    output = f"---\n# Source: chart/templates/cm.yaml\n{text}\n"  # as `helm template` prints it
    assert to_objects(Path("chart"), split_cli_output(output)) == objects


async def test_generate_name_without_a_name_is_an_error_naming_object_and_template(
    renderer: Renderer,
) -> None:
    with pytest.raises(ChartError) as failure:
        await render(renderer, "broken/generate-name")
    message = str(failure.value)
    assert "generate-name/templates/job.yaml" in message
    assert "ConfigMap 'rel-run-'" in message
    assert "metadata.generateName" in message
    assert "Job" not in message  # the hook Job with generateName is dropped, as hooks are


async def test_crlf_bom_comment_only_and_blank_documents_render_as_helm_reads_them(
    renderer: Renderer,
) -> None:
    objects = await render(renderer, "text-quirks")
    assert list(objects) == [
        "ConfigMap/rel-crlf",
        "ConfigMap/rel-crlf-second",
        "ConfigMap/rel-after-comment",
        "ConfigMap/rel-last",
    ]
    # Helm applies each document trimmed and followed by a newline: the block scalar keeps it
    assert objects["ConfigMap/rel-crlf"].raw["data"] == {"text": "line one\nline two\n"}


async def test_subcharts_follow_conditions_tags_imports_globals_and_libraries(
    renderer: Renderer,
) -> None:
    default = await render(renderer, "dependencies")
    assert list(default) == [
        "CustomResourceDefinition/backups.example.com",  # crds/ of an enabled subchart
        "ConfigMap/rel-settings",
        "Service/rel-database",
    ]
    settings = default["ConfigMap/rel-settings"].raw
    assert settings["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "Helm"}  # library
    assert settings["data"] == {
        "domain": "example.test",
        "imported": '{"fromChild":"child","fromParent":"kept","port":5432}',
    }
    assert default["Service/rel-database"].annotations == {"domain": "example.test"}

    flipped = await render(
        renderer,
        "dependencies",
        {"tags.optional": True, "metrics.enabled": True, "database.enabled": False},
    )
    assert list(flipped) == [
        "ConfigMap/rel-cache",
        "ConfigMap/rel-metrics",
        "ConfigMap/rel-settings",
    ]
    assert flipped["ConfigMap/rel-cache"].raw["data"] == {"domain": "example.test"}  # a .tgz


async def test_requirements_yaml_of_an_apiversion_v1_chart_is_honoured(renderer: Renderer) -> None:
    enabled = await render(renderer, "requirements-v1")
    assert list(enabled) == ["ConfigMap/rel-worker", "ConfigMap/rel-parent"]
    assert enabled["ConfigMap/rel-worker"].raw["data"] == {"replicas": "2"}
    assert enabled["ConfigMap/rel-parent"].raw["data"] == {"imported": "jobs"}
    disabled = await render(renderer, "requirements-v1", {"worker.enabled": False})
    assert list(disabled) == ["ConfigMap/rel-parent"]


async def test_values_that_violate_the_schema_name_the_chart_and_the_field(
    renderer: Renderer,
) -> None:
    assert await render(renderer, "values-schema")
    with pytest.raises(ChartError) as failure:
        await render(renderer, "values-schema", {"replicaCount": "three", "image.tag": 5})
    message = str(failure.value)
    assert "values-schema" in message
    assert "/replicaCount': got string, want integer" in message
    assert "/image/tag': got number, want string" in message


async def test_files_and_kind_capabilities_reach_the_templates(renderer: Renderer) -> None:
    objects = await render(renderer, "files-and-capabilities", capabilities=CLUSTER_1_30)
    data = objects["ConfigMap/rel-files"].raw["data"]
    assert data["app.toml"] == data["single"] == 'log_level = "info"\n'
    assert data["dashboard.json"] == '{"dashboard": "📈 requests"}\n'
    assert (data["missing"], data["lines"]) == ("", "1")
    assert objects["Secret/rel-files"].raw["data"] == {"password.txt": "czNjcjN0"}
    assert objects["PodDisruptionBudget/rel"].api_version == "policy/v1"
    assert objects["ConfigMap/rel-capabilities"].raw["data"] == {
        "hasIngressKind": "true",
        "hasMadeUpKind": "false",
        "hasMadeUpVersion": "false",
        "semverOk": "true",
    }
    # without the cluster's discovery (as `helm template`), kinds are unknown
    offline = await render(renderer, "files-and-capabilities")
    assert offline["PodDisruptionBudget/rel"].api_version == "policy/v1beta1"


async def test_hooks_of_every_form_are_left_out_and_manifest_quirks_kept(
    renderer: Renderer,
) -> None:
    objects = await render(renderer, "manifest-quirks")
    assert list(objects) == [
        "ConfigMap/rel-blank-namespace",
        "ConfigMap/rel-empty",
        "ConfigMap/rel-numbers",
        "ClusterRole/rel-ns-reader",
        "Service/rel-nodeport",
        "Deployment/rel",
    ]  # no `test`, `pre-install,post-install` or `crd-install` hook
    assert objects["ConfigMap/rel-empty"].raw["data"] is None  # dropped by `prepare`
    assert objects["Deployment/rel"].raw["status"] == {}  # dropped by `prepare`


async def test_crds_in_crds_dir_are_installed_even_with_a_leftover_hook_annotation(
    renderer: Renderer,
) -> None:
    objects = await render(renderer, "crd-hook-annotations")
    assert list(objects) == ["CustomResourceDefinition/legacies.hooks.example.io", "Legacy/rel"]


async def test_an_object_rendered_twice_comes_out_twice_in_template_order(
    renderer: Renderer,
) -> None:
    """`prepare_all` applies the last one, as Helm does (tests/core/test_chart_traits.py)."""
    path = FIXTURE_CHARTS / "duplicate-objects"
    objects = await renderer.render(path, release="rel", namespace="ns", values={})
    assert [obj.raw["data"]["from"] for obj in objects] == ["a", "b"]


@pytest.mark.parametrize("overrides", [{}, {"redis.enabled": False}], ids=["enabled", "disabled"])
async def test_a_dependency_missing_from_charts_dir_fails_as_in_helm(
    renderer: Renderer, overrides: dict[str, Any]
) -> None:
    """Even a disabled one: Helm checks what Chart.yaml declares before it reads conditions."""
    with pytest.raises(ChartError) as failure:
        await render(renderer, "broken/missing-dependency", overrides)
    message = str(failure.value)
    assert "broken/missing-dependency" in message
    assert "helm dependency build" in message
    assert message.endswith("found in Chart.yaml, but missing in charts/ directory: redis")


async def test_a_managed_clusters_vendor_version_meets_the_charts_kube_version(
    renderer: Renderer,
) -> None:
    """`>=1.25.0-0` and `>=1.25.0` alike: GKE, EKS and k3s report versions with suffixes."""
    gke = Capabilities("v1.30.0-gke.100")
    assert await render(renderer, "broken/needs-new-kube", capabilities=gke)
    assert await render(renderer, "broken/kube-version-plain", capabilities=gke)
    with pytest.raises(ChartError, match=r"incompatible with Kubernetes v1\.24\.9-eks-abc"):
        await render(
            renderer, "broken/kube-version-plain", capabilities=Capabilities("v1.24.9-eks-abc")
        )
