"""The `serverless` component's custom action: record what reconciled it, and which version.

It shows the smallest useful action: a `post_reconcile` hook that applies a ConfigMap through
the context's cluster client, and a `pre_delete` hook that removes it again (the reconciler only
deletes what the chart renders, and never a namespace that still holds objects it does not own).
It imports only the reconciler's public surface (`from reconciler import ...`), the one place
whose names stay put across releases; `ActionContext` there is what every hook receives.
"""

from __future__ import annotations

from typing import Any

from reconciler import ActionContext

RUNTIME_INFO_NAME = "serverless-runtime-info"
RECONCILED_BY = "reconciler-example-action"


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
