"""The sample custom action (examples/actions) for the `serverless` component.

It is loaded the way the reconciler loads actions (an entry point of group `reconciler.actions`),
without installing the package: its directory goes on sys.path for the test.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import tomllib
from dataclasses import dataclass, field
from typing import Any

import pytest
import structlog
from lightkube import AsyncClient, codecs
from lightkube.resources.core_v1 import ConfigMap

from reconciler.model.task import Task
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


@dataclass
class RecordingKube:
    applied: list[dict[str, Any]] = field(default_factory=list)

    async def apply(self, obj: dict[str, Any]) -> None:
        self.applied.append(obj)


@dataclass
class Context:
    task: Task
    kube: Any
    logger: Any = field(default_factory=structlog.get_logger)


def serverless_task(namespace: str = "kyma-system", version: str = "2.4.0") -> Task:
    return Task(
        component="serverless",
        namespace=namespace,
        version=version,
        chart=str(EXAMPLES / "kyma-like" / "resources" / "serverless"),
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


async def test_post_reconcile_applies_the_runtime_info_config_map(action: Any) -> None:
    kube = RecordingKube()

    with structlog.testing.capture_logs() as logs:
        await action.post_reconcile(Context(task=serverless_task(), kube=kube))

    (obj,) = kube.applied
    assert obj["apiVersion"] == "v1"
    assert obj["kind"] == "ConfigMap"
    assert obj["metadata"]["name"] == "serverless-runtime-info"
    assert obj["metadata"]["namespace"] == "kyma-system"
    assert obj["data"] == {"reconciledBy": "reconciler-example-action", "version": "2.4.0"}
    assert [entry["event"] for entry in logs] == ["serverless runtime info applied"]


@dataclass
class LightkubeKube:
    """The smallest cluster access the action needs: a server-side apply as `reconciler`."""

    client: AsyncClient

    async def apply(self, obj: dict[str, Any]) -> Any:
        resource = codecs.from_dict(obj)
        return await self.client.apply(resource, field_manager="reconciler", force=True)


@pytest.mark.slow
async def test_post_reconcile_result_is_server_side_applied_and_idempotent(
    action: Any, kube_client: AsyncClient, namespace: str
) -> None:
    ctx = Context(task=serverless_task(namespace, "2.4.1"), kube=LightkubeKube(kube_client))

    await action.post_reconcile(ctx)
    first = await kube_client.get(ConfigMap, "serverless-runtime-info", namespace=namespace)
    await action.post_reconcile(ctx)
    second = await kube_client.get(ConfigMap, "serverless-runtime-info", namespace=namespace)

    assert first.data == {"reconciledBy": "reconciler-example-action", "version": "2.4.1"}
    assert first.metadata is not None
    assert second.metadata is not None
    assert [m.manager for m in first.metadata.managedFields or []] == ["reconciler"]
    assert second.metadata.resourceVersion == first.metadata.resourceVersion
