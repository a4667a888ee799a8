"""chart_values: values.yaml ⊕ profile file ⊕ overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.charts.values import chart_values
from reconciler.errors import ChartError


@pytest.fixture
def chart(tmp_path: Path) -> Path:
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: demo\nversion: 0.1.0\n")
    (tmp_path / "values.yaml").write_text(
        "replicas: 1\n"
        "image: {repository: nginx, tag: '1.25'}\n"
        "podAnnotations:\n  sidecar.istio.io/inject: 'false'\n"
        "ports: [80, 443]\n"
    )
    return tmp_path


def test_without_profile_or_overrides_the_chart_defaults_apply(chart: Path) -> None:
    values = chart_values(chart, profile=None, overrides={})
    assert values["replicas"] == 1
    assert values["podAnnotations"] == {"sidecar.istio.io/inject": "false"}  # not split on dots


def test_profile_file_is_layered_over_the_defaults(chart: Path) -> None:
    (chart / "profile-production.yaml").write_text("replicas: 3\nimage: {tag: '1.26'}\n")
    values = chart_values(chart, profile="production", overrides={})
    assert values["replicas"] == 3
    assert values["image"] == {"repository": "nginx", "tag": "1.26"}


def test_profile_prefixed_file_wins_over_the_bare_name(chart: Path) -> None:
    (chart / "profile-evaluation.yaml").write_text("replicas: 2\n")
    (chart / "evaluation.yaml").write_text("replicas: 5\n")
    assert chart_values(chart, profile="evaluation", overrides={})["replicas"] == 2


def test_bare_profile_file_is_used_when_there_is_no_prefixed_one(chart: Path) -> None:
    (chart / "evaluation.yaml").write_text("replicas: 5\n")
    assert chart_values(chart, profile="evaluation", overrides={})["replicas"] == 5


def test_a_chart_without_the_profile_uses_its_defaults(chart: Path) -> None:
    assert chart_values(chart, profile="production", overrides={})["replicas"] == 1


def test_flat_and_nested_overrides_win_over_profile_and_defaults(chart: Path) -> None:
    (chart / "profile-production.yaml").write_text("replicas: 3\n")
    values = chart_values(
        chart,
        profile="production",
        overrides={"replicas": 4, "image.tag": "2.0", "global": {"domain": "local"}},
    )
    assert values["replicas"] == 4
    assert values["image"] == {"repository": "nginx", "tag": "2.0"}
    assert values["global"] == {"domain": "local"}
    assert values["ports"] == [80, 443]


def test_lists_are_replaced_not_merged(chart: Path) -> None:
    assert chart_values(chart, profile=None, overrides={"ports": [8080]})["ports"] == [8080]


def test_chart_without_values_file_has_only_the_overrides(tmp_path: Path) -> None:
    assert chart_values(tmp_path, profile=None, overrides={"a.b": 1}) == {"a": {"b": 1}}


def test_invalid_yaml_names_the_file_and_line(chart: Path) -> None:
    (chart / "profile-broken.yaml").write_text("replicas: 3\nimage: [unclosed\nother: 1\n")
    with pytest.raises(
        ChartError, match=r"profile-broken\.yaml is not valid YAML at line \d+, column \d+"
    ):
        chart_values(chart, profile="broken", overrides={})


def test_invalid_yaml_in_values_file_names_it(chart: Path) -> None:
    (chart / "values.yaml").write_text("a: 1\n  b: 2\n")
    with pytest.raises(ChartError, match=r"values\.yaml is not valid YAML at line 2, column \d+"):
        chart_values(chart, profile=None, overrides={})


def test_values_file_that_is_not_a_map_is_an_error(chart: Path) -> None:
    (chart / "values.yaml").write_text("- a\n- b\n")
    with pytest.raises(ChartError, match=r"values\.yaml holds a list"):
        chart_values(chart, profile=None, overrides={})


@pytest.mark.parametrize("profile", ["../values", "a/b", ".hidden"])
def test_profile_names_cannot_reach_outside_the_chart(chart: Path, profile: str) -> None:
    with pytest.raises(ChartError, match="invalid profile name"):
        chart_values(chart, profile=profile, overrides={})


def test_unquoted_dates_stay_strings_as_in_helm(chart: Path) -> None:
    (chart / "values.yaml").write_text("released: 2024-01-01\nenabled: true\n")
    values = chart_values(chart, profile=None, overrides={})
    assert values == {"released": "2024-01-01", "enabled": True}
