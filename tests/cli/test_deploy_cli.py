"""`reconciler deploy | delete | diff | template` as a user runs them."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from reconciler.cli.main import app
from reconciler.kube import records
from reconciler.kube.cluster import Cluster
from reconciler.model.kube_object import KubeObject
from tests.conftest import ClusterFactory, KubeTarget
from tests.helpers.charts import CONFIGMAPS, make_chart

EXAMPLES = Path(__file__).parents[2] / "examples" / "kyma-like"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


async def invoke_async(*args: str) -> Result:
    """The CLI runs its own event loop: call it from a thread inside async tests."""
    return await asyncio.to_thread(invoke, *args)


def workspace(root: Path, charts: dict[str, dict[str, Any]]) -> Path:
    """A minimal Kyma-style workspace: components.yaml + resources/<name>/."""
    (root / "installation" / "resources").mkdir(parents=True)
    (root / "installation" / "resources" / "components.yaml").write_text(
        yaml.safe_dump(
            {"defaultNamespace": "cli-test", "components": [{"name": n} for n in charts]}
        )
    )
    for name, spec in charts.items():
        make_chart(root / "resources", name, spec["templates"], spec.get("values"))
    return root


def summary(result: Result) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.stdout)
    return {c["name"]: c for c in data["components"]}


def obj(api_version: str, kind: str, name: str, namespace: str = "") -> KubeObject:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return KubeObject({"apiVersion": api_version, "kind": kind, "metadata": meta})


@pytest.mark.slow
async def test_sample_set_deploys_ready_is_idempotent_and_deletes_cleanly(
    cluster_factory: ClusterFactory, tmp_path: Path
) -> None:
    target = await cluster_factory(controller_manager=True, kubelet=True)
    kubeconfig = str(target.kubeconfig)
    first = await invoke_async(
        "deploy",
        "--kubeconfig",
        kubeconfig,
        "-w",
        str(EXAMPLES),
        "--profile",
        "production",
        "--value",
        "global.domainName=x.io",
        "-o",
        "json",
        "--timeout",
        "120",
    )
    assert first.exit_code == 0, first.output
    components = summary(first)
    assert list(components) == [
        "CRDs",
        "cluster-essentials",
        "istio",
        "certificates",
        "app-gateway",
        "eventing",
        "monitoring",
        "serverless",
    ]
    assert all(c["state"] == "done" for c in components.values())

    async with await Cluster.connect(kubeconfig) as cluster:
        monitoring = await cluster.get(
            obj("apps/v1", "Deployment", "monitoring-operator", "kyma-system")
        )
        assert monitoring is not None
        assert monitoring.raw["spec"]["replicas"] == 2  # production profile
        assert monitoring.raw["status"]["availableReplicas"] == 2
        action_cm = await cluster.get(
            obj("v1", "ConfigMap", "serverless-runtime-info", "kyma-system")
        )
        assert action_cm is not None  # the serverless component's custom action ran
        hook = await cluster.get(obj("batch/v1", "Job", "app-gateway-pre-install", "kyma-system"))
        assert hook is None  # Helm hooks are not applied

    again = await invoke_async(
        "deploy",
        "--kubeconfig",
        kubeconfig,
        "-w",
        str(EXAMPLES),
        "--profile",
        "production",
        "--value",
        "global.domainName=x.io",
        "-o",
        "json",
    )
    assert again.exit_code == 0, again.output
    assert {name: c["changed"] for name, c in summary(again).items() if c["changed"]} == {}

    diff = await invoke_async(
        "diff",
        "--kubeconfig",
        kubeconfig,
        "-w",
        str(EXAMPLES),
        "--profile",
        "production",
        "--value",
        "global.domainName=x.io",
    )
    assert diff.exit_code == 0, diff.output

    gone = await invoke_async(
        "delete", "--kubeconfig", kubeconfig, "-w", str(EXAMPLES), "-o", "json", "--timeout", "120"
    )
    assert gone.exit_code == 0, gone.output
    assert next(iter(summary(gone))) == "serverless"
    warnings = [w for c in summary(gone).values() for w in c["warnings"]]
    async with await Cluster.connect(kubeconfig) as cluster:
        for name in ("kyma-system", "istio-system"):
            assert await cluster.get(obj("v1", "Namespace", name)) is None, warnings
        crd = obj(
            "apiextensions.k8s.io/v1", "CustomResourceDefinition", "certificates.cert.example.io"
        )
        assert await cluster.get(crd) is None


async def test_diff_shows_drift_and_deploy_reports_it(
    kube_cluster: KubeTarget, tmp_path: Path
) -> None:
    ws = workspace(
        tmp_path / "ws",
        {"greeter": {"templates": {"cms.yaml": CONFIGMAPS}, "values": {"configmaps": ["hello"]}}},
    )
    args = ("--kubeconfig", str(kube_cluster.kubeconfig), "-w", str(ws))
    assert (await invoke_async("deploy", *args)).exit_code == 0
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        await cluster.client.request(
            "PATCH",
            "/api/v1/namespaces/cli-test/configmaps/hello",
            body={"data": {"greeting": "drifted"}},
            content_type="application/merge-patch+json",
        )
    diff = await invoke_async("diff", *args)
    assert diff.exit_code == 1
    assert "-  greeting: drifted" in diff.stdout
    assert "+  greeting: hello" in diff.stdout
    fixed = await invoke_async("deploy", *args, "-o", "json")
    assert summary(fixed)["greeter"]["changed"] == ["configmap cli-test/hello"]
    assert (await invoke_async("delete", *args)).exit_code == 0


def test_template_prints_manifests_without_a_cluster() -> None:
    result = invoke("template", "-w", str(EXAMPLES), "-c", "istio")
    assert result.exit_code == 0, result.output
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert {d["kind"] for d in docs} >= {"Deployment", "Service", "Gateway"}
    assert all(d["kind"] != "CustomResourceDefinition" or d for d in docs)


def test_missing_kubeconfig_is_named(tmp_path: Path) -> None:
    result = invoke("deploy", "--kubeconfig", str(tmp_path / "nope"), "-w", str(EXAMPLES))
    assert result.exit_code == 1
    assert "kubeconfig file" in result.output
    assert "does not exist" in result.output


def test_no_kubeconfig_anywhere_says_how_to_give_one(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["deploy", "-w", str(EXAMPLES)], env={"KUBECONFIG": None, "HOME": str(tmp_path)}
    )
    assert result.exit_code == 1
    assert "malformed" not in result.output
    assert "no kubeconfig: pass --kubeconfig PATH or set KUBECONFIG" in result.output
    assert f"{tmp_path}/.kube/config does not exist" in result.output


def test_a_component_without_a_chart_is_bad_input_before_any_cluster_is_asked(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path / "ws", {"fine": {"templates": {"cm.yaml": CONFIGMAPS}}})
    components = ws / "installation" / "resources" / "components.yaml"
    components.write_text(yaml.safe_dump({"components": [{"name": "fine"}, {"name": "nochart"}]}))
    dead = tmp_path / "kubeconfig"  # asking this cluster would fail with exit 1
    dead.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "current-context": "c",
            }
        )
    )
    result = invoke("deploy", "--kubeconfig", str(dead), "-w", str(ws))
    assert result.exit_code == 2, result.output
    assert f"no chart for component nochart ({ws}/resources/nochart)" in result.output
    assert "CRDs" not in result.output


def test_malformed_kubeconfig_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("clusters: [: nope")
    result = invoke("deploy", "--kubeconfig", str(bad), "-w", str(EXAMPLES))
    assert result.exit_code == 1
    assert "kubeconfig is not valid YAML" in result.output


def test_unreachable_apiserver_is_named(kube_cluster: KubeTarget, tmp_path: Path) -> None:
    text = kube_cluster.kubeconfig.read_text()
    server = next(line.split()[-1] for line in text.splitlines() if "server:" in line)
    dead = tmp_path / "kubeconfig"
    dead.write_text(text.replace(server, "https://127.0.0.1:1"))
    result = invoke("deploy", "--kubeconfig", str(dead), "-w", str(EXAMPLES))
    assert result.exit_code == 1
    assert "cannot reach the apiserver at https://127.0.0.1:1" in result.output


def test_unknown_component_is_named(kube_cluster: KubeTarget) -> None:
    result = invoke(
        "deploy",
        "--kubeconfig",
        str(kube_cluster.kubeconfig),
        "-w",
        str(EXAMPLES),
        "-c",
        "no-such-thing",
    )
    assert result.exit_code == 2
    assert "unknown component 'no-such-thing'" in result.output


def test_a_profile_no_chart_defines_is_refused_naming_those_that_exist(
    kube_cluster: KubeTarget,
) -> None:
    result = invoke(
        "deploy", "--kubeconfig", str(kube_cluster.kubeconfig), "-w", str(EXAMPLES), "--profile",
        "prod",
    )  # fmt: skip
    assert result.exit_code == 2
    assert (
        "profile 'prod' is defined by no chart of the set; the charts define: evaluation, "
        "production"
    ) in result.output


def test_invalid_values_file_is_named_with_its_line(
    kube_cluster: KubeTarget, tmp_path: Path
) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("global:\n  domain: ok\n bad: [\n")
    result = invoke(
        "deploy",
        "--kubeconfig",
        str(kube_cluster.kubeconfig),
        "-w",
        str(EXAMPLES),
        "-f",
        str(values),
    )
    assert result.exit_code == 2
    assert f"values file {values} is not valid YAML at line" in result.output


async def test_chart_that_fails_to_render_names_component_and_applies_nothing(
    kube_cluster: KubeTarget, tmp_path: Path
) -> None:
    ws = workspace(tmp_path / "ws", {"broken": {"templates": {"x.yaml": '{{ fail "boom" }}'}}})
    result = await invoke_async(
        "deploy", "--kubeconfig", str(kube_cluster.kubeconfig), "-w", str(ws), "-o", "json"
    )
    assert result.exit_code == 1
    broken = summary(result)["broken"]
    assert broken["state"] == "failed"
    assert "component broken" in broken["error"]
    assert "boom" in broken["error"]
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        assert await records.read(cluster, "broken", "cli-test") is None


async def test_rejected_object_names_component_and_cause_and_keeps_the_record(
    kube_cluster: KubeTarget, tmp_path: Path
) -> None:
    ws = workspace(
        tmp_path / "ws",
        {
            "rejected": {
                "templates": {"cms.yaml": CONFIGMAPS},
                "values": {"configmaps": ["ok", "NOT_OK"]},
            }
        },
    )
    result = await invoke_async(
        "deploy", "--kubeconfig", str(kube_cluster.kubeconfig), "-w", str(ws), "-o", "json"
    )
    assert result.exit_code == 1
    error = summary(result)["rejected"]["error"]
    assert error.startswith("component rejected: ")
    assert "configmap cli-test/NOT_OK: rejected by the apiserver" in error
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        record = await records.read(cluster, "rejected", "cli-test")
        assert record is not None
        assert {e.name for e in record.entries} >= {"ok", "NOT_OK"}
    shutil.rmtree(ws)
