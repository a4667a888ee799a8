"""Every role runs with what a pod has and nothing else: a ServiceAccount's token, the cluster's
CA and `KUBERNETES_SERVICE_HOST/PORT`, no kubeconfig anywhere.

The test bed runs no real pods, so the process gets that environment the way a kubelet gives it:
in a private mount namespace (`unshare --mount`), a directory holding `token`, `ca.crt` and
`namespace` is mounted at /run, so /var/run/secrets/kubernetes.io/serviceaccount is where every
client library looks, while this host's /run stays untouched for everyone else. The token is a
TokenRequest for a ServiceAccount created on the test-bed apiserver; the operator's is bound to
the chart's own ClusterRole, so the test also proves that role is enough to reconcile a Kyma.
Needs root (mount namespaces).
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import yaml

from reconciler.devcluster.ports import free_ports
from reconciler.devcluster.processes import tied_to_parent
from reconciler.infra.install import install_crds as install_infra_crds
from reconciler.kube.cluster import Cluster
from reconciler.model.lifecycle import SYNC
from reconciler.operator.clusters.install import install_crds
from reconciler.util.polling import poll_until
from tests.conftest import KubeTarget
from tests.deploy.chart import CHART, render
from tests.infra import samples
from tests.infra.conftest import Garden
from tests.operator import modules
from tests.operator.conftest import LOCAL_SOURCES_ENV, World

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="a private mount namespace needs root and util-linux's unshare",
)
RUN = Path("/var/run").resolve()
MOUNT_AND_RUN = 'mount --bind "$0" "$1" && shift && exec "$@"'


async def service_account(cluster: Cluster, namespace: str, name: str, run_dir: Path) -> None:
    """`run_dir`/secrets/kubernetes.io/serviceaccount as a kubelet fills it for `name`."""
    review = await cluster.client.request(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
        body={
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        },
    )
    account = run_dir / "secrets" / "kubernetes.io" / "serviceaccount"
    account.mkdir(parents=True, exist_ok=True)
    (account / "token").write_text(review["status"]["token"])
    (account / "namespace").write_text(namespace)


def pod_environment(kubeconfig: Path, run_dir: Path, home: Path) -> dict[str, str]:
    """The CA file and the variables a pod gets; HOME empty, no KUBECONFIG."""
    config = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]
    account = run_dir / "secrets" / "kubernetes.io" / "serviceaccount"
    account.mkdir(parents=True, exist_ok=True)
    if "certificate-authority-data" in config:
        ca = base64.b64decode(config["certificate-authority-data"])
    else:
        ca = Path(config["certificate-authority"]).read_bytes()
    (account / "ca.crt").write_bytes(ca)
    server = urlsplit(config["server"])
    home.mkdir()
    return {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "HOME": str(home),
        "RECONCILER_CACHE_DIR": str(home / "cache"),
        "KUBERNETES_SERVICE_HOST": str(server.hostname),
        "KUBERNETES_SERVICE_PORT": str(server.port or 443),
    }


@asynccontextmanager
async def in_pod(
    run_dir: Path, env: dict[str, str], *args: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    """`reconciler *args` with `run_dir` mounted at /run in a mount namespace of its own."""
    reconciler = str(Path(sys.executable).with_name("reconciler"))
    command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", MOUNT_AND_RUN]
    process = await asyncio.create_subprocess_exec(
        *tied_to_parent([*command, str(run_dir), str(RUN), reconciler, *args]),
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), 60)


async def chart_role(cluster: Cluster, namespace: str, release: str, values: dict[str, Any]) -> str:
    """The ServiceAccount, ClusterRole and binding of the one role `values` enable, applied as
    the chart renders them; the account's name."""
    account = ""
    values = {"mothership": {"enabled": False}, **values}
    for obj in await render(values, namespace=namespace, release=release):
        if obj.kind in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding"):
            await cluster.apply(obj)
            account = obj.name if obj.kind == "ServiceAccount" else account
    return account


def operator_values() -> dict[str, Any]:
    """The operator with the chart's default module rules plus the test modules' own kind."""
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())["operator"]["moduleRules"]
    verbs = ["get", "list", "watch", "create", "update", "patch", "delete"]
    own = {"apiGroups": [modules.CRD_GROUP], "resources": ["gammas"], "verbs": verbs}
    return {"operator": {"enabled": True, "moduleRules": [*defaults, own]}}


async def remove_cluster_role(cluster: Cluster, name: str) -> None:
    for kind in ("clusterrolebindings", "clusterroles"):
        await cluster.client.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/{kind}/{name}")


@pytest.mark.slow
async def test_operator_reconciles_a_kyma_with_the_pods_service_account_and_the_charts_role(
    kube_cluster: KubeTarget, namespace: str, tmp_path: Path
) -> None:
    release = f"ic-{namespace[-6:]}"
    run_dir = tmp_path / "run"
    env = pod_environment(kube_cluster.kubeconfig, run_dir, tmp_path / "home")
    env |= {"RECONCILER_OPERATOR_BUSY_INTERVAL": "0.5", "RECONCILER_OPERATOR_ERROR_INTERVAL": "0.5"}
    env |= LOCAL_SOURCES_ENV
    async with await Cluster.connect(kube_cluster.kubeconfig) as control:
        await install_crds(control)
        account = await chart_role(control, namespace, release, operator_values())
        try:
            await service_account(control, namespace, account, run_dir)
            world = World(control, control, kube_cluster.kubeconfig, namespace, tmp_path)
            chart = modules.module_chart(tmp_path, "gamma", "1.0.0", [f"gamma-{namespace}"])
            await control.apply(modules.template(namespace, "gamma", "1.0.0", chart))
            await control.apply(modules.release_meta(namespace, "gamma", {"regular": "1.0.0"}))
            kyma: dict[str, Any] = modules.kyma(namespace, "local", "regular", [{"name": "gamma"}])
            kyma["metadata"]["labels"] = {SYNC: "false"}  # modules go to the operator's cluster
            await control.apply(kyma)

            args = ("operator", "run", "--namespace", namespace)
            async with in_pod(run_dir, env, *args) as operator:
                try:
                    await world.kyma_state("local", "Ready")
                except Exception:
                    operator.terminate()
                    _, errors = await operator.communicate()
                    raise AssertionError(errors.decode()[-3000:]) from None
            configmap = await world.get(
                "ConfigMap", f"gamma-{namespace}", namespace="kyma-system", api_version="v1"
            )
            assert configmap is not None
        finally:
            await remove_cluster_role(control, f"{release}-reconciler-operator")


@pytest.mark.parametrize(
    "role",
    [
        ("mothership", "serve", "--host", "127.0.0.1"),
        ("component", "serve", "--host", "127.0.0.1"),
    ],
    ids=["mothership", "component-reconciler"],
)
async def test_services_get_ready_in_a_pod_environment_without_a_kubeconfig(
    kube_cluster: KubeTarget, tmp_path: Path, role: tuple[str, ...]
) -> None:
    run_dir = tmp_path / "run"
    env = pod_environment(kube_cluster.kubeconfig, run_dir, tmp_path / "home")
    (port,) = free_ports(1)
    token = tmp_path / "token"
    token.write_text("shared-token\n")
    env |= {"RECONCILER_API_AUTH": "none", "RECONCILER_DATA_DIR": str(tmp_path / "data")}
    extra = ("--token-file", str(token)) if role[0] == "component" else ()
    async with (
        in_pod(run_dir, env, *role, "--port", str(port), *extra) as process,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http,
    ):

        async def ready() -> bool | None:
            if process.returncode is not None:
                _, errors = await process.communicate()
                raise AssertionError(errors.decode()[-3000:])
            try:
                return (await http.get("/health/ready")).status_code == 200 or None
            except httpx.TransportError:
                return None

        await poll_until(ready, timeout=90, what=f"{role[0]} ready", interval=0.2)


@pytest.mark.slow
async def test_infrastructure_manager_provisions_a_runtime_with_the_pods_service_account(
    kube_cluster: KubeTarget, namespace: str, garden: Garden, tmp_path: Path
) -> None:
    release = f"im-{namespace[-6:]}"
    run_dir = tmp_path / "run"
    env = pod_environment(kube_cluster.kubeconfig, run_dir, tmp_path / "home")
    env |= {
        "RECONCILER_INFRA_GARDENER_PROJECT": garden.project,
        "RECONCILER_INFRA_CREATE_POLL_INTERVAL": "0.2",
        "RECONCILER_INFRA_UPDATE_POLL_INTERVAL": "0.2",
        "RECONCILER_INFRA_DELETE_POLL_INTERVAL": "0.2",
        "RECONCILER_INFRA_GARDENER_REQUEUE_INTERVAL": "0.2",
        "RECONCILER_INFRA_ERROR_INTERVAL": "0.2",
        "RECONCILER_INFRA_ERROR_MAX_INTERVAL": "1",
        # a landscape's converter configuration: with its DNS (the simulator has no default domain)
        "RECONCILER_INFRA_CONVERTER_CONFIG": str(samples.CONVERTER_CONFIG),
    }
    values = {"infrastructureManager": {"enabled": True, "gardenKubeconfigSecret": "garden"}}
    async with await Cluster.connect(kube_cluster.kubeconfig) as kcp:
        await install_infra_crds(kcp)
        account = await chart_role(kcp, namespace, release, values)
        try:
            await service_account(kcp, namespace, account, run_dir)
            await kcp.apply(samples.runtime("rt-a", namespace, shoot="shoot-a"))
            args = ("infra", "run", "--namespace", namespace)
            garden_kubeconfig = ("--garden-kubeconfig", str(garden.kubeconfig))
            async with in_pod(run_dir, env, *args, *garden_kubeconfig) as manager:

                async def ready() -> bool | None:
                    if manager.returncode is not None:
                        _, errors = await manager.communicate()
                        raise AssertionError(errors.decode()[-3000:])
                    runtime = await kcp.get(samples.runtime("rt-a", namespace))
                    status = (runtime.raw.get("status") or {}) if runtime else {}
                    return status.get("state") == "Ready" or None

                try:
                    await poll_until(ready, timeout=120, what="Runtime rt-a Ready", interval=0.2)
                except Exception:
                    manager.terminate()
                    _, errors = await manager.communicate()
                    raise AssertionError(errors.decode()[-3000:]) from None
        finally:
            await remove_cluster_role(kcp, f"{release}-reconciler-infra")
