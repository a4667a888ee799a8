"""The sample custom action (examples/actions) for the `serverless` component.

It is loaded the way the reconciler loads actions (an entry point of group `reconciler.actions`),
without installing the package: its directory goes on sys.path for the test. Its hooks get the
real `ActionContext` on the test-bed apiserver, as the reconciler would hand it.
"""

from __future__ import annotations

import ast
import importlib.metadata
import inspect
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from lightkube import AsyncClient
from lightkube.resources.core_v1 import ConfigMap

from reconciler import ActionContext, ChartRef, Cluster, Task
from tests.conftest import KubeTarget
from tests.examples.sample import EXAMPLES

ACTIONS = EXAMPLES / "actions"
GROUP = "reconciler.actions"
HOOKS = ("pre_reconcile", "reconcile", "post_reconcile", "pre_delete", "delete", "post_delete")


def project() -> dict[str, Any]:
    meta: dict[str, Any] = tomllib.loads((ACTIONS / "pyproject.toml").read_text())["project"]
    return meta


@pytest.fixture
def action(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(ACTIONS))
    value = project()["entry-points"][GROUP]["serverless"]
    return importlib.metadata.EntryPoint(name="serverless", value=value, group=GROUP).load()


@pytest.fixture
async def cluster(kube_cluster: KubeTarget) -> AsyncIterator[Cluster]:
    async with await Cluster.connect(kube_cluster.kubeconfig) as connected:
        yield connected


def context(task: Task, cluster: Cluster, tmp_path: Path) -> ActionContext:
    """The context the reconciler hands every hook, built from the public API only."""
    return ActionContext(task=task, kube=cluster, logger=structlog.get_logger())


def serverless_task(namespace: str = "kyma-system", version: str = "2.4.0") -> Task:
    return Task(
        component="serverless",
        namespace=namespace,
        version=version,
        source=ChartRef(str(EXAMPLES / "kyma-like" / "resources" / "serverless")),
    )


def test_the_package_registers_the_serverless_entry_point() -> None:
    meta = project()

    assert meta["name"] == "kyma-reconciler-example-actions"
    assert meta["entry-points"][GROUP] == {
        "serverless": "reconciler_example_actions.serverless:action"
    }
    build = tomllib.loads((ACTIONS / "pyproject.toml").read_text())["build-system"]
    assert build["build-backend"] == "hatchling.build"


def test_the_action_implements_post_reconcile_and_pre_delete(action: Any) -> None:
    implemented = [hook for hook in HOOKS if hasattr(action, hook)]

    assert implemented == ["post_reconcile", "pre_delete"]
    assert inspect.iscoroutinefunction(action.post_reconcile)


async def test_post_reconcile_applies_the_runtime_info_config_map(
    action: Any, cluster: Cluster, kube_client: AsyncClient, namespace: str, tmp_path: Path
) -> None:
    with structlog.testing.capture_logs() as logs:
        await action.post_reconcile(context(serverless_task(namespace), cluster, tmp_path))

    applied = await kube_client.get(ConfigMap, "serverless-runtime-info", namespace=namespace)
    assert applied.data == {"reconciledBy": "reconciler-example-action", "version": "2.4.0"}
    assert applied.metadata is not None
    assert applied.metadata.labels == {
        "app.kubernetes.io/name": "serverless",
        "app.kubernetes.io/component": "runtime-info",
        "app.kubernetes.io/part-of": "kyma",
    }
    assert [entry["event"] for entry in logs] == ["serverless runtime info applied"]


@pytest.mark.slow
async def test_post_reconcile_result_is_server_side_applied_and_idempotent(
    action: Any, cluster: Cluster, kube_client: AsyncClient, namespace: str, tmp_path: Path
) -> None:
    ctx = context(serverless_task(namespace, "2.4.1"), cluster, tmp_path)

    await action.post_reconcile(ctx)
    first = await kube_client.get(ConfigMap, "serverless-runtime-info", namespace=namespace)
    await action.post_reconcile(ctx)
    second = await kube_client.get(ConfigMap, "serverless-runtime-info", namespace=namespace)

    assert first.data == {"reconciledBy": "reconciler-example-action", "version": "2.4.1"}
    assert first.metadata is not None
    assert second.metadata is not None
    assert [m.manager for m in first.metadata.managedFields or []] == ["reconciler"]
    assert second.metadata.resourceVersion == first.metadata.resourceVersion


async def test_pre_delete_removes_the_config_map_again(
    action: Any, cluster: Cluster, kube_client: AsyncClient, namespace: str, tmp_path: Path
) -> None:
    ctx = context(serverless_task(namespace), cluster, tmp_path)
    await action.post_reconcile(ctx)

    await action.pre_delete(ctx)

    left = [cm.metadata.name async for cm in kube_client.list(ConfigMap, namespace=namespace)]
    assert "serverless-runtime-info" not in left


def test_the_action_imports_only_the_public_surface() -> None:
    """Plug-ins type against `from reconciler import ...`; nothing deeper, which may move."""
    package = ACTIONS / "reconciler_example_actions"
    deeper = [
        f"{path.name}:{node.lineno}"
        for path in package.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("reconciler."))
        or (
            isinstance(node, ast.Import)
            and any(alias.name.startswith("reconciler.") for alias in node.names)
        )
    ]
    assert deeper == []
    assert "kyma-reconciler" in project()["dependencies"]
