"""The `serverless` component's custom action: record what reconciled it, and which version.

It shows the smallest useful action: a `post_reconcile` hook that applies a ConfigMap through
the context's cluster client, and a `pre_delete` hook that removes it again (the reconciler only
deletes what the chart renders, and never a namespace that still holds objects it does not own).
It deliberately does not import the reconciler: the context is described by the small protocols
below (structural typing), so the package installs and type-checks on its own, and only the
attributes it really uses are part of its contract.
"""

from __future__ import annotations

from typing import Any, Protocol

RUNTIME_INFO_NAME = "serverless-runtime-info"
RECONCILED_BY = "reconciler-example-action"


class _Task(Protocol):
    @property
    def namespace(self) -> str: ...

    @property
    def version(self) -> str: ...


class _Kube(Protocol):
    async def apply(self, obj: dict[str, Any]) -> Any:
        """Server-side apply of a plain manifest (field manager `reconciler`)."""
        ...

    async def delete(self, obj: dict[str, Any]) -> bool:
        """Delete a plain manifest's object; False when it was already gone."""
        ...


class _Logger(Protocol):
    def info(self, event: str, **kw: Any) -> Any: ...


class ActionContext(Protocol):
    """What this action needs from the reconciler's action context."""

    @property
    def task(self) -> _Task: ...

    @property
    def kube(self) -> _Kube: ...

    @property
    def logger(self) -> _Logger: ...


def runtime_info(namespace: str, version: str) -> dict[str, Any]:
    """The ConfigMap manifest `post_reconcile` applies."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": RUNTIME_INFO_NAME,
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/name": "serverless",
                "app.kubernetes.io/component": "runtime-info",
                "app.kubernetes.io/part-of": "kyma",
            },
        },
        "data": {"reconciledBy": RECONCILED_BY, "version": version},
    }


class ServerlessAction:
    """`post_reconcile` and `pre_delete`; every other step keeps the default behaviour."""

    async def post_reconcile(self, ctx: ActionContext) -> None:
        task = ctx.task
        version = str(task.version)
        await ctx.kube.apply(runtime_info(task.namespace, version))
        ctx.logger.info(
            "serverless runtime info applied",
            configmap=RUNTIME_INFO_NAME,
            namespace=task.namespace,
            version=version,
        )

    async def pre_delete(self, ctx: ActionContext) -> None:
        task = ctx.task
        await ctx.kube.delete(runtime_info(task.namespace, str(task.version)))
        ctx.logger.info("serverless runtime info removed", configmap=RUNTIME_INFO_NAME)


# The entry point `serverless` in group `reconciler.actions` resolves to this object.
action = ServerlessAction()
