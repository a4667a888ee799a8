"""Workspace: the Kyma source-tree layout, and collecting every CRD of a version."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from reconciler.charts.sources import ChartCache
from reconciler.charts.workspace import Workspace, collect_crds
from reconciler.errors import ChartError
from reconciler.model.component import ComponentSetError, ComponentSpec
from tests.charts.support import FIXTURE_CHARTS, ChartServer, tgz_of


def crd(plural: str, *, group: str = "example.com", served: bool = True) -> str:
    kind = plural.capitalize().rstrip("s")
    return yaml.safe_dump(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {
                "group": group,
                "names": {"kind": kind, "plural": plural},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": served, "storage": True}],
            },
        }
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "kyma"
    (root / "installation" / "resources" / "crds" / "nested").mkdir(parents=True)
    (root / "installation" / "resources" / "components.yaml").write_text(
        "defaultNamespace: kyma-system\n"
        "prerequisites:\n"
        "  - name: crds\n"
        "components:\n"
        "  - name: plain\n"
        "    namespace: apps\n"
        "  - name: extra\n"
        "    url: charts/subcharts\n"
        "    dependsOn: [plain]\n"
    )
    crds_dir = root / "installation" / "resources" / "crds"
    widgets = (FIXTURE_CHARTS / "crds" / "crds" / "example.yaml").read_text().split("---")[0]
    (crds_dir / "b-things.yaml").write_text(crd("things") + "---\n" + widgets)
    (crds_dir / "nested" / "a-others.yaml").write_text(crd("others"))
    (crds_dir / "README.md").write_text("not a CRD file\n")
    for name in ("plain", "crds"):
        shutil.copytree(FIXTURE_CHARTS / name, root / "resources" / name)
    shutil.copytree(FIXTURE_CHARTS / "subcharts", root / "charts" / "subcharts")
    return Workspace(root)


def test_component_set_is_read_from_the_installation_resources(workspace: Workspace) -> None:
    component_set = workspace.component_set()
    assert component_set.names() == ["crds", "plain", "extra"]
    assert component_set.get("extra").depends_on == ("plain",)


def test_invalid_yaml_in_the_component_set_names_file_and_line(workspace: Workspace) -> None:
    workspace.components_file.write_text("components:\n  - name: a\n   namespace: b\n")
    with pytest.raises(ComponentSetError, match=r"components\.yaml at line 3"):
        workspace.component_set()


def test_a_component_set_breaking_the_schema_names_the_file(
    workspace: Workspace, tmp_path: Path
) -> None:
    other = tmp_path / "other.yaml"
    other.write_text("components:\n  - name: a\n    dependsOn: [ghost]\n")
    with pytest.raises(ComponentSetError, match=rf"{other}: .*depends on unknown \['ghost'\]"):
        workspace.component_set(other)


def test_a_missing_component_set_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ComponentSetError, match="cannot read component set"):
        Workspace(tmp_path).component_set()


def test_chart_sources_default_to_resources_and_resolve_relative_urls(
    workspace: Workspace,
) -> None:
    root = workspace.root
    assert workspace.chart_source(ComponentSpec(name="plain")) == str(root / "resources/plain")
    assert workspace.chart_source(ComponentSpec(name="x", url="charts/x")) == str(root / "charts/x")
    for url in ("/abs/chart", "https://h/c.tgz", "oci://r/c:1.0.0"):
        assert workspace.chart_source(ComponentSpec(name="x", url=url)) == url


def test_crd_files_are_the_yaml_files_below_the_crds_directory(workspace: Workspace) -> None:
    crds_dir = workspace.root / "installation" / "resources" / "crds"
    assert workspace.crd_files() == [crds_dir / "b-things.yaml", crds_dir / "nested/a-others.yaml"]


async def test_all_crds_of_a_version_are_collected_once(
    workspace: Workspace, tmp_path: Path
) -> None:
    component_set = workspace.component_set()

    crds = await collect_crds(workspace, component_set, ChartCache(tmp_path / "cache"))

    assert [c.name for c in crds] == [
        "things.example.com",  # workspace files first, sorted
        "widgets.example.com",  # also in the crds chart, identically: kept once
        "others.example.com",
        "sprockets.example.com",  # the crds chart's crds/ ...
        "gadgets.example.com",  # ... then its subchart's
        "extras.example.com",  # the subcharts chart's conditional subchart
    ]


async def test_a_crd_defined_differently_twice_is_an_error(
    workspace: Workspace, tmp_path: Path
) -> None:
    crds_dir = workspace.root / "installation" / "resources" / "crds"
    (crds_dir / "b-things.yaml").write_text(crd("things") + "---\n" + crd("gadgets", served=False))
    with pytest.raises(ChartError, match=r"CRD gadgets\.example\.com is defined differently in"):
        await collect_crds(workspace, workspace.component_set(), ChartCache(tmp_path / "cache"))


async def test_a_non_crd_in_the_workspace_crd_files_is_an_error(
    workspace: Workspace, tmp_path: Path
) -> None:
    path = workspace.root / "installation" / "resources" / "crds" / "c.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stray}\n")
    with pytest.raises(ChartError, match=rf"{path} holds ConfigMap 'stray'"):
        await collect_crds(workspace, workspace.component_set(), ChartCache(tmp_path / "cache"))


async def test_invalid_yaml_in_a_crd_file_names_file_and_line(
    workspace: Workspace, tmp_path: Path
) -> None:
    path = workspace.root / "resources" / "crds" / "crds" / "example.yaml"
    path.write_text("kind: CustomResourceDefinition\nmetadata: {name: [x}\n")
    with pytest.raises(ChartError, match=rf"invalid YAML in CRD file {path} at line 2"):
        await collect_crds(workspace, workspace.component_set(), ChartCache(tmp_path / "cache"))


async def test_crds_of_downloaded_charts_are_collected(
    workspace: Workspace, tmp_path: Path, chart_server: ChartServer
) -> None:
    chart_server.routes["/crds-0.1.0.tgz"] = (200, tgz_of(FIXTURE_CHARTS / "crds"))
    components = workspace.root / "installation" / "resources" / "components.yaml"
    components.write_text(
        f"components:\n  - name: remote\n    url: {chart_server.url('/crds-0.1.0.tgz')}\n"
    )

    crds = await collect_crds(workspace, workspace.component_set(), ChartCache(tmp_path / "c"))

    assert "sprockets.example.com" in [c.name for c in crds]
