"""Renderers: the in-process SDK renderer gives exactly what `helm template` gives."""

from __future__ import annotations

import asyncio
import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.charts.render import (
    Capabilities,
    CliRenderer,
    Renderer,
    SdkRenderer,
    default_renderer,
)
from reconciler.charts.values import chart_values
from reconciler.core.generated import Path as GeneratedPath
from reconciler.core.generated import generated_paths
from reconciler.errors import ChartError
from reconciler.model.kube_object import KubeObject, ObjectKey
from reconciler.paths import find_binary
from tests.charts.support import FIXTURE_CHARTS
from tests.helpers.crds import minimal_crd

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OLD = Capabilities("v1.20.2", ("batch/v1", "example.com/v1"))
NEW = Capabilities("v1.30.0")

pytestmark = pytest.mark.skipif(find_binary("helm") is None, reason="the helm CLI is not built")


def parity_charts() -> list[Any]:
    """Every fixture chart and every example chart that exists when the tests are collected."""
    fixtures = sorted(FIXTURE_CHARTS.glob("*/Chart.yaml"))
    examples = sorted(EXAMPLES.glob("*/resources/*/Chart.yaml"))
    return [
        pytest.param(path.parent, id=str(path.parent.relative_to(base)))
        for base, paths in ((FIXTURE_CHARTS, fixtures), (EXAMPLES, examples))
        for path in paths
    ]


@pytest.fixture(scope="module")
def sdk() -> SdkRenderer:
    return SdkRenderer()  # shared, so its chart cache is exercised across tests


@pytest.fixture(params=["sdk", "cli"])
def renderer(request: pytest.FixtureRequest, sdk: SdkRenderer) -> Renderer:
    return sdk if request.param == "sdk" else CliRenderer()


async def render(
    renderer: Renderer,
    chart: Path,
    capabilities: Capabilities | None = OLD,
    *,
    overrides: dict[str, Any] | None = None,
) -> list[KubeObject]:
    values = chart_values(chart, profile=None, overrides=overrides or {})
    return await renderer.render(
        chart, release="rel", namespace="ns", values=values, capabilities=capabilities
    )


def keys(objects: list[KubeObject]) -> list[str]:
    return [f"{obj.kind}/{obj.name}" for obj in objects]


def by_key(objects: list[KubeObject]) -> dict[str, KubeObject]:
    return {f"{obj.kind}/{obj.name}": obj for obj in objects}


@pytest.mark.parametrize("capabilities", [OLD, NEW], ids=["v1.20.2", "v1.30.0"])
@pytest.mark.parametrize("chart", parity_charts())
async def test_sdk_and_cli_render_the_same_objects(
    chart: Path, capabilities: Capabilities, sdk: SdkRenderer
) -> None:
    outcomes: list[Any] = []
    for renderer in (sdk, CliRenderer()):
        try:
            objects = await render(renderer, chart, capabilities)
        except ChartError:
            outcomes.append(ChartError)
            continue
        outcomes.append(objects)
    if ChartError in outcomes:
        assert outcomes[0] == outcomes[1]
        return
    # Values a chart makes up (randAlphaNum, genCA, checksums over them) differ between any two
    # renders, so they are compared by where they are, not by what they are.
    generated = generated_paths(outcomes[0], await render(sdk, chart, capabilities))
    assert [masked(obj, generated) for obj in outcomes[0]] == [
        masked(obj, generated) for obj in outcomes[1]
    ]


def masked(obj: KubeObject, generated: dict[ObjectKey, list[GeneratedPath]]) -> dict[str, Any]:
    """The object's fields with every generated value replaced by a marker."""
    raw = copy.deepcopy(obj.raw)
    for path in generated.get(obj.key, []):
        node: Any = raw
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = "<generated>"
    return raw


@pytest.mark.parametrize("chart", sorted(FIXTURE_CHARTS.glob("*/Chart.yaml")), ids=str)
async def test_fixture_charts_render(chart: Path, sdk: SdkRenderer) -> None:
    assert await render(sdk, chart.parent)


async def test_capabilities_reach_the_templates(renderer: Renderer) -> None:
    chart = FIXTURE_CHARTS / "capabilities"

    old = by_key(await render(renderer, chart, OLD))
    new = by_key(await render(renderer, chart, NEW))

    assert old["ConfigMap/rel-capabilities"].raw["data"] == {
        "kubeVersion": "v1.20.2",
        "minor": "20",
        "hasBatchV1": "true",
        "hasWidgets": "true",
    }
    assert new["ConfigMap/rel-capabilities"].raw["data"]["kubeVersion"] == "v1.30.0"
    assert new["ConfigMap/rel-capabilities"].raw["data"]["hasWidgets"] == "false"
    assert "Widget/rel-widget" in old
    assert "Widget/rel-widget" not in new
    assert old["PodDisruptionBudget/rel"].api_version == "policy/v1beta1"
    assert new["PodDisruptionBudget/rel"].api_version == "policy/v1"


async def test_helm_hooks_are_not_rendered(renderer: Renderer) -> None:
    objects = await render(renderer, FIXTURE_CHARTS / "hooks")
    assert keys(objects) == ["ConfigMap/rel-settings"]


async def test_crds_of_the_chart_and_its_subcharts_come_first(renderer: Renderer) -> None:
    objects = await render(renderer, FIXTURE_CHARTS / "crds")
    assert keys(objects) == [
        "CustomResourceDefinition/gadgets.example.com",
        "CustomResourceDefinition/sprockets.example.com",
        "CustomResourceDefinition/widgets.example.com",
        "Service/rel-gadgets",
        "Widget/rel-widget",
    ]


async def test_objects_come_in_install_order_without_notes_partials_or_empty_documents(
    renderer: Renderer,
) -> None:
    objects = await render(renderer, FIXTURE_CHARTS / "plain")
    assert keys(objects) == [
        "Namespace/ns",
        "ServiceAccount/rel",
        "ConfigMap/rel-a",
        "ConfigMap/rel-b",
        "ConfigMap/rel-release",  # same kind: by template path, then name
        "ClusterRole/rel-reader",
        "ClusterRoleBinding/rel-reader",
        "Service/rel-web",
        "Deployment/rel-web",
    ]
    assert by_key(objects)["ConfigMap/rel-b"].raw["data"] == {"namespace": "ns"}
    assert by_key(objects)["ConfigMap/rel-a"].annotations == {"released": "2024-01-01"}


async def test_values_reach_the_templates_and_do_not_stick(renderer: Renderer) -> None:
    chart = FIXTURE_CHARTS / "plain"
    scaled = by_key(
        await render(renderer, chart, overrides={"replicaCount": 5, "extraConfig": True})
    )
    default = by_key(await render(renderer, chart))

    assert scaled["Deployment/rel-web"].raw["spec"]["replicas"] == 5
    assert "ConfigMap/rel-extra" in scaled
    assert default["Deployment/rel-web"].raw["spec"]["replicas"] == 1
    assert "ConfigMap/rel-extra" not in default


async def test_concurrent_renders_of_one_chart_keep_their_own_values(sdk: SdkRenderer) -> None:
    chart = FIXTURE_CHARTS / "plain"
    results = await asyncio.gather(
        *(render(sdk, chart, overrides={"replicaCount": n}) for n in range(1, 21))
    )
    replicas = [
        by_key(objects)["Deployment/rel-web"].raw["spec"]["replicas"] for objects in results
    ]
    assert replicas == list(range(1, 21))


async def test_a_disabled_subchart_can_be_enabled_again(sdk: SdkRenderer) -> None:
    """helm_python removes disabled subcharts from a loaded chart; renders must not see that."""
    chart = FIXTURE_CHARTS / "subcharts"
    cli = CliRenderer()
    for enabled in (True, False, True, False):
        objects = await render(sdk, chart, overrides={"extra.enabled": enabled})
        assert objects == await render(cli, chart, overrides={"extra.enabled": enabled})
        assert ("CustomResourceDefinition/extras.example.com" in keys(objects)) is enabled
        assert ("ConfigMap/rel-extra" in keys(objects)) is enabled


async def test_a_chart_edited_on_disk_is_loaded_again(chart_copy: Path, sdk: SdkRenderer) -> None:
    before = by_key(await render(sdk, chart_copy))
    service = chart_copy / "templates" / "service.yaml"
    service.write_text(service.read_text().replace("targetPort: 80", "targetPort: 8080"))

    after = by_key(await render(sdk, chart_copy))

    assert before["Service/rel-web"].raw["spec"]["ports"][0]["targetPort"] == 80
    assert after["Service/rel-web"].raw["spec"]["ports"][0]["targetPort"] == 8080


async def test_a_failing_template_names_the_chart_and_helms_message(renderer: Renderer) -> None:
    chart = FIXTURE_CHARTS / "broken" / "failing-template"
    with pytest.raises(ChartError) as failure:
        await render(renderer, chart)
    message = str(failure.value)
    assert str(chart) in message
    assert "failing-template/templates/deployment.yaml" in message
    assert "image.tag is required" in message


async def test_a_document_without_kind_names_the_template(renderer: Renderer) -> None:
    chart = FIXTURE_CHARTS / "broken" / "not-an-object"
    with pytest.raises(ChartError, match=r"not-an-object/templates/configmap\.yaml .*without kind"):
        await render(renderer, chart)


async def test_invalid_yaml_names_the_template(renderer: Renderer) -> None:
    with pytest.raises(ChartError, match=r"bad-yaml/templates/configmap\.yaml"):
        await render(renderer, FIXTURE_CHARTS / "broken" / "bad-yaml")


async def test_the_charts_kube_version_range_is_enforced(renderer: Renderer) -> None:
    chart = FIXTURE_CHARTS / "broken" / "needs-new-kube"
    with pytest.raises(ChartError, match=r"kubeVersion.*>=1\.25\.0-0.*incompatible.*v1\.20\.2"):
        await render(renderer, chart, OLD)
    assert keys(await render(renderer, chart, NEW)) == ["ConfigMap/rel"]


async def test_an_invalid_release_name_is_refused(renderer: Renderer) -> None:
    chart = FIXTURE_CHARTS / "plain"
    with pytest.raises(ChartError, match="invalid release name"):
        await renderer.render(chart, release="Not_Valid", namespace="ns", values={})


async def test_a_missing_chart_is_an_error(renderer: Renderer, tmp_path: Path) -> None:
    with pytest.raises(ChartError, match=str(tmp_path / "nothing")):
        await renderer.render(tmp_path / "nothing", release="rel", namespace="ns", values={})


async def test_cli_renderer_reports_a_missing_helm(tmp_path: Path) -> None:
    renderer = CliRenderer(helm=tmp_path / "helm")
    with pytest.raises(ChartError, match="cannot run"):
        await render(renderer, FIXTURE_CHARTS / "plain")


def test_the_default_renderer_renders_in_process() -> None:
    assert isinstance(default_renderer(), SdkRenderer)


async def test_a_chart_in_a_relative_directory_renders(
    renderer: Renderer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(FIXTURE_CHARTS / "hooks", tmp_path / "hooks")
    monkeypatch.chdir(tmp_path)
    assert keys(await render(renderer, Path("hooks"))) == ["ConfigMap/rel-settings"]


async def test_crds_files_are_left_out_on_request_and_templated_crds_stay(
    renderer: Renderer, tmp_path: Path
) -> None:
    chart = tmp_path / "crds"
    shutil.copytree(FIXTURE_CHARTS / "crds", chart)
    (chart / "templates" / "crd.yaml").write_text(yaml.safe_dump(minimal_crd("example.com", "Cog")))
    values = chart_values(chart, profile=None, overrides={})

    async def crds(include: bool) -> set[str]:
        objects = await renderer.render(
            chart, release="rel", namespace="ns", values=values, include_crds=include
        )
        return {obj.name for obj in objects if obj.is_crd}

    # crds/ of the chart and of its subchart, and the one its templates render
    assert await crds(True) == {
        "widgets.example.com",
        "sprockets.example.com",
        "gadgets.example.com",
        "cogs.example.com",
    }
    assert await crds(False) == {"cogs.example.com"}
