"""The Grafana dashboard and the alerts shipped with the chart read only series our processes
export, and the chart renders them only when asked."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from reconciler.api.http_metrics import HttpMetrics
from reconciler.infra.metrics import InfraMetrics
from reconciler.observability.metrics import Metrics
from reconciler.operator.metrics import OperatorMetrics
from reconciler.remote.metrics import ServiceMetrics
from tests.deploy.chart import CHART, MINIMAL, merged, render

DASHBOARD = CHART / "files" / "dashboard.json"
ALERTS = CHART / "files" / "alerts.yaml"
SERIES = re.compile(
    r"\b((?:reconciler|process|python|infrastructure_manager)_[a-z0-9_]+|unexpected_stops_total)\b"
)
"""Our series, and KIM's the infrastructure manager exports under KIM's names."""
SUFFIXES = ("_bucket", "_sum", "_count", "_total", "_info")


def exported() -> set[str]:
    """Every series name the mothership, a component reconciler, the operator and the
    infrastructure manager export (each in a registry of its own, as in production)."""
    names: set[str] = set()
    mothership = Metrics()
    HttpMetrics.of(mothership.registry)
    registries: list[CollectorRegistry] = [
        mothership.registry,
        ServiceMetrics().registry,
        OperatorMetrics().registry,
        InfraMetrics().registry,
    ]
    for registry in registries:
        for family in registry.collect():
            names.add(family.name)
            names.update(family.name + suffix for suffix in SUFFIXES)
            names.update(sample.name for sample in family.samples)
    return names


def expressions() -> dict[str, str]:
    """Where each PromQL expression stands -> the expression."""
    found: dict[str, str] = {}
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel["targets"]:
            found[f"dashboard panel {panel['title']!r}"] = target["expr"]
    for group in yaml.safe_load(ALERTS.read_text())["groups"]:
        for rule in group["rules"]:
            found[f"alert {rule['alert']}"] = rule["expr"]
    return found


def test_every_series_the_dashboard_and_the_alerts_read_is_exported() -> None:
    known = exported()
    missing = {
        f"{where}: {name}"
        for where, expr in expressions().items()
        for name in SERIES.findall(expr)
        if name not in known
    }
    assert not missing, sorted(missing)
    assert len(expressions()) >= 25


def test_every_expression_has_balanced_brackets_and_every_alert_says_what_to_do() -> None:
    for where, expr in expressions().items():
        for opening, closing in ("()", "[]", "{}"):
            assert expr.count(opening) == expr.count(closing), where
    for group in yaml.safe_load(ALERTS.read_text())["groups"]:
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
            assert rule["annotations"]["summary"], rule["alert"]
            assert rule["annotations"]["description"], rule["alert"]


def objects_of(kind: str, objects: list[Any]) -> list[dict[str, Any]]:
    return [obj.raw for obj in objects if obj.kind == kind]


def dashboards(objects: list[Any]) -> list[dict[str, Any]]:
    return [
        c for c in objects_of("ConfigMap", objects) if c["metadata"]["name"].endswith("-dashboard")
    ]


async def test_the_chart_ships_dashboard_and_rules_only_when_enabled() -> None:
    plain = await render(MINIMAL)
    enabled = await render(
        merged(
            MINIMAL,
            {
                "monitoring": {
                    "dashboard": {"enabled": True},
                    "rules": {"enabled": True, "labels": {"release": "prometheus"}},
                }
            },
        )
    )

    assert objects_of("PrometheusRule", plain) == []
    assert not [
        c for c in objects_of("ConfigMap", plain) if c["metadata"]["name"].endswith("-dashboard")
    ]
    (dashboard,) = [
        c for c in objects_of("ConfigMap", enabled) if c["metadata"]["name"].endswith("-dashboard")
    ]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["reconciler.json"]) == json.loads(DASHBOARD.read_text())
    (rule,) = objects_of("PrometheusRule", enabled)
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    assert rule["spec"] == yaml.safe_load(ALERTS.read_text())
    assert "{{ $labels.runtime_id }}" in json.dumps(rule["spec"])  # not templated by Helm


@pytest.mark.parametrize("section", ["dashboard", "rules"])
async def test_a_misspelt_monitoring_value_fails_the_render(section: str) -> None:
    with pytest.raises(Exception, match=r"enabeld|additional"):
        await render(merged(MINIMAL, {"monitoring": {section: {"enabeld": True}}}))
