"""deploy/chart: renders for a matrix of values, every object passes the test-bed apiserver's
server-side dry run, bad values fail before anything is applied, Helm renders what the project's
renderer renders, and `reconciler deploy --workspace deploy` installs it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.charts.render import Capabilities, CliRenderer
from reconciler.charts.workspace import Workspace
from reconciler.errors import ChartError
from reconciler.infra.converter.config import load_converter_config
from reconciler.infra.crds import all_crds as infra_crds
from reconciler.kube.cluster import Cluster
from reconciler.model.kube_object import KubeObject
from reconciler.operator.clusters.crds import all_crds
from tests.cli.test_deploy_cli import invoke_async
from tests.conftest import KubeTarget
from tests.deploy.chart import (
    CHART,
    EVERYTHING,
    KUBE_VERSION,
    MINIMAL,
    REPO,
    SECRETS,
    by_kind,
    merged,
    render,
)
from tests.infra.samples import CONVERTER_CONFIG

MATRIX: dict[str, dict[str, Any]] = {
    "defaults and static tokens (SQLite, one replica)": MINIMAL,
    "PostgreSQL and a shared key, 3 replicas": {
        **SECRETS,
        "mothership": {**SECRETS["mothership"], "replicas": 3},
    },
    "everything on": EVERYTHING,
    "operator only": {"mothership": {"enabled": False}, "operator": {"enabled": True}},
    "operator with the watcher's listener": {
        "mothership": {"enabled": False},
        "operator": {
            "enabled": True,
            "watcher": {"enabled": True, "listenerHosts": ["kcp.example"]},
        },
    },
    "infrastructure manager only": {
        "mothership": {"enabled": False},
        "infrastructureManager": {"enabled": True, "gardenKubeconfigSecret": "garden"},
    },
    "static tokens, TLS, no PDB, no metrics port": {
        "mothership": {
            "auth": {"mode": "static", "tokensSecret": "tokens"},
            "tls": {"enabled": True, "secretName": "tls"},
            "podDisruptionBudget": {"enabled": False},
            "metrics": {"enabled": False},
        }
    },
}


@pytest.mark.parametrize("values", MATRIX.values(), ids=MATRIX.keys())
async def test_every_rendered_object_passes_a_server_side_dry_run(
    kube_cluster: KubeTarget, namespace: str, values: dict[str, Any]
) -> None:
    objects = await render(values, namespace=namespace, release=f"r-{namespace[-6:]}")
    assert objects
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        for obj in objects:
            await cluster.apply(obj, dry_run=True)


async def test_every_container_runs_non_root_on_a_read_only_root() -> None:
    for deployment in by_kind(await render(EVERYTHING), "Deployment"):
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        mounts = {v["name"] for v in pod["volumes"]}
        assert {"tmp", "cache"} <= mounts
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"]["drop"] == ["ALL"]


async def test_secrets_reach_the_mothership_as_references_never_as_values() -> None:
    objects = await render(EVERYTHING)
    mothership = next(
        d for d in by_kind(objects, "Deployment") if d["metadata"]["name"].endswith("mothership")
    )
    container = mothership["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    assert env["RECONCILER_DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {
        "name": "reconciler-db",
        "key": "url",
    }
    assert env["RECONCILER_ENCRYPTION_KEY_FILE"]["value"] == "/etc/reconciler/encryption/key"
    assert env["RECONCILER_INVOKER"]["value"] == "remote"
    assert "--cert-file=/etc/reconciler/tls/tls.crt" in container["args"]
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["path"].startswith("/health/")
        assert container[probe]["httpGet"]["scheme"] == "HTTPS"
    assert not by_kind(objects, "Secret")  # the chart makes none: the operator provides them


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"mothership": {"replicass": 2}}, "additional properties 'replicass' not allowed"),
        ({"mothership": {"auth": {"mode": "tokens"}}}, "/mothership/auth/mode"),
        (
            {
                "operator": {
                    "moduleRules": [{"apiGroups": ["*"], "resources": ["a"], "verbs": ["get"]}]
                }
            },
            "/operator/moduleRules/0/apiGroups/0",
        ),
        (
            {
                "operator": {
                    "moduleRules": [{"apiGroups": [""], "resources": ["a"], "verbs": ["*"]}]
                }
            },
            "/operator/moduleRules/0/verbs/0",
        ),
        (
            {"operator": {"watcher": {"listenerUrl": "http://kcp.example:8443"}}},
            "/operator/watcher/listenerUrl",
        ),
        ({}, "mothership: no API authentication"),
        (
            merged(MINIMAL, {"mothership": {"replicas": 2}}),
            "more than one replica needs PostgreSQL",
        ),
        (
            merged(MINIMAL, {"mothership": {"database": {"existingSecret": "db"}}}),
            "encryption.existingSecret",
        ),
        (merged(MINIMAL, {"mothership": {"tls": {"enabled": True}}}), "tls.secretName"),
        (
            {**MINIMAL, "componentReconcilers": {"enabled": True}},
            "componentReconcilers.tokenSecret",
        ),
        (
            {**MINIMAL, "infrastructureManager": {"enabled": True}},
            "infrastructureManager.gardenKubeconfigSecret",
        ),
        (
            {
                **MINIMAL,
                "infrastructureManager": {
                    "enabled": True,
                    "gardenKubeconfigSecret": "g",
                    "converterConfig": {"converter": {}},
                    "converterConfigMap": "kim",
                },
            },
            "infrastructureManager.converterConfig and infrastructureManager.converterConfigMap",
        ),
    ],
)
async def test_bad_values_fail_the_render_naming_the_value(
    values: dict[str, Any], message: str
) -> None:
    with pytest.raises(ChartError, match=message.replace(".", r"\.")):
        await render(values)


async def test_helm_renders_the_same_objects_as_the_project() -> None:
    ours = await render(EVERYTHING)
    helms = await CliRenderer().render(
        CHART,
        release="reconciler",
        namespace="reconciler-system",
        values=EVERYTHING,
        capabilities=Capabilities(kube_version=KUBE_VERSION),
    )
    assert sorted(o.raw.__repr__() for o in helms) == sorted(o.raw.__repr__() for o in ours)


def test_chart_crds_are_the_operators_and_the_infrastructure_managers() -> None:
    """Generated from the models (`reconciler operator|infra install-crds --print`): kept equal."""
    crds = CHART / "files" / "crds"
    operator = list(yaml.safe_load_all((crds / "operator.kyma-project.io.yaml").read_text()))
    assert operator == all_crds()
    infra = (crds / "infrastructuremanager.kyma-project.io.yaml").read_text()
    assert list(yaml.safe_load_all(infra)) == infra_crds()
    assert not (CHART / "crds").exists()  # Helm would install those whatever the values say


async def test_a_roles_crds_come_only_with_the_role_and_outlive_it() -> None:
    """The operator's and the infrastructure manager's CRDs are rendered only when that role is
    on, each annotated `helm.sh/resource-policy: keep`: turning the role off later (or
    uninstalling) leaves them and the users' custom resources in place."""
    generated = {crd["metadata"]["name"]: crd for crd in [*all_crds(), *infra_crds()]}
    operator_crds = {crd["metadata"]["name"] for crd in all_crds()}
    cases = [
        ({}, set()),
        ({"operator": {"enabled": True}}, operator_crds),
        (
            {"infrastructureManager": {"enabled": True, "gardenKubeconfigSecret": "g"}},
            set(generated) - operator_crds,
        ),
    ]
    for values, expected in cases:
        crds = by_kind(await render(merged(MINIMAL, values)), "CustomResourceDefinition")
        assert {crd["metadata"]["name"] for crd in crds} == expected, values
        for crd in crds:
            assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
            assert crd["spec"] == generated[crd["metadata"]["name"]]["spec"]


def test_deploy_directory_is_a_workspace_naming_the_chart() -> None:
    workspace = Workspace(REPO / "deploy")
    components = workspace.component_set().components
    assert [c.name for c in components] == ["reconciler"]
    assert Path(workspace.chart_source(components[0])) == CHART


async def test_reconciler_deploy_installs_the_chart_from_the_deploy_workspace(
    kube_cluster: KubeTarget, namespace: str, tmp_path: Path
) -> None:
    """Installed with the infrastructure manager on, then again with it off: its Deployment is
    pruned, its CRDs (`helm.sh/resource-policy: keep`) stay, and with them users' Runtimes."""
    components = tmp_path / "components.yaml"
    components.write_text(
        yaml.safe_dump(
            {"defaultNamespace": namespace, "components": [{"name": "reconciler", "url": "chart"}]}
        )
    )

    async def deploy(*values: str) -> None:
        result = await invoke_async(
            "deploy",
            "--kubeconfig", str(kube_cluster.kubeconfig),
            "--workspace", str(REPO / "deploy"),
            "--components", str(components),
            "-c", "reconciler",
            "--value", "reconciler.image.repository=registry.example/reconciler",
            "--value", "reconciler.mothership.auth.tokensSecret=reconciler-tokens",
            *(part for value in values for part in ("--value", value)),
            "--no-wait",
        )  # fmt: skip
        assert result.exit_code == 0, result.output

    def named(api_version: str, kind: str, name: str, ns: str | None = None) -> dict[str, Any]:
        return {
            "apiVersion": api_version,
            "kind": kind,
            "metadata": {"name": name, "namespace": ns},
        }

    crd = named(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "runtimes.infrastructuremanager.kyma-project.io",
    )
    infra = named("apps/v1", "Deployment", "reconciler-infra", namespace)
    await deploy(
        "reconciler.infrastructureManager.enabled=true",
        "reconciler.infrastructureManager.gardenKubeconfigSecret=garden",
    )
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        assert await cluster.get(infra) is not None
        installed = await cluster.get(crd)
        assert installed is not None
        assert installed.raw["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"

    await deploy()
    async with await Cluster.connect(kube_cluster.kubeconfig) as cluster:
        deployment = await cluster.get(
            named("apps/v1", "Deployment", "reconciler-mothership", namespace)
        )
        assert await cluster.get(infra) is None  # the role's objects went
        assert await cluster.get(crd) is not None  # its CRD did not
    assert deployment is not None
    image = deployment.raw["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "registry.example/reconciler:0.1.0"


def acl_switch(objects: list[KubeObject]) -> tuple[str | None, list[dict[str, Any]]]:
    """The manager's RECONCILER_INFRA_API_SERVER_ACL_ENABLED and its ConfigMap rules."""
    [deployment] = [
        d for d in by_kind(objects, "Deployment") if d["metadata"]["name"].endswith("-infra")
    ]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    [role] = [
        r for r in by_kind(objects, "ClusterRole") if r["metadata"]["name"].endswith("-infra")
    ]
    rules = [r for r in role["rules"] if "configmaps" in r["resources"]]
    return env.get("RECONCILER_INFRA_API_SERVER_ACL_ENABLED"), rules


async def test_the_converter_configuration_reaches_the_manager_as_a_file_it_reads(
    tmp_path: Path,
) -> None:
    """`converterConfig` in the values becomes a ConfigMap mounted where
    RECONCILER_INFRA_CONVERTER_CONFIG points, and the manager reads it as the same configuration;
    `converterConfigMap` mounts an existing one under `converterConfigKey` instead."""
    kim = yaml.safe_load(CONVERTER_CONFIG.read_text())
    infra = {"enabled": True, "gardenKubeconfigSecret": "g"}

    def mounted(objects: list[dict[str, Any]]) -> tuple[str, str]:
        """(the env's file path, the ConfigMap the converter volume mounts)."""
        [deployment] = [d for d in objects if d["metadata"]["name"].endswith("-infra")]
        pod = deployment["spec"]["template"]["spec"]
        [container] = pod["containers"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        path = str(env["RECONCILER_INFRA_CONVERTER_CONFIG"])
        assert path.startswith(mounts["converter"] + "/")
        return path, volumes["converter"]["configMap"]["name"]

    objects = await render(
        merged(MINIMAL, {"infrastructureManager": {**infra, "converterConfig": kim}})
    )
    path, name = mounted(by_kind(objects, "Deployment"))
    [configmap] = [c for c in by_kind(objects, "ConfigMap") if c["metadata"]["name"] == name]
    written = tmp_path / Path(path).name
    written.write_text(configmap["data"][Path(path).name])
    assert load_converter_config(written) == load_converter_config(CONVERTER_CONFIG)

    own = {**infra, "converterConfigMap": "kim-config", "converterConfigKey": "config.yaml"}
    own["apiServerAclEnabled"] = True  # KIM's flag, and the right to read its ACL ConfigMap
    objects = await render(merged(MINIMAL, {"infrastructureManager": own}))
    assert mounted(by_kind(objects, "Deployment")) == (
        "/etc/reconciler/converter/config.yaml",
        "kim-config",
    )
    assert acl_switch(objects) == (
        "true",
        [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
    )
    assert not [c for c in by_kind(objects, "ConfigMap") if "converter" in c["metadata"]["name"]]
    plain_objects = await render(merged(MINIMAL, {"infrastructureManager": infra}))
    assert acl_switch(plain_objects) == (None, [])
    plain = by_kind(plain_objects, "Deployment")
    [deployment] = [d for d in plain if d["metadata"]["name"].endswith("-infra")]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert "RECONCILER_INFRA_CONVERTER_CONFIG" not in {e["name"] for e in container["env"]}
