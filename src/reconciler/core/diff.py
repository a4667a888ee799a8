"""What deploying a component set would change, as the apiserver itself computes it.

The same render -> prepare steps a deploy runs, then a server-side dry-run apply per object
(`kube.diff`): any driver (the CLI's `diff`, an API, an operator) can show a change before making
it. Nothing is written to the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping

from reconciler.core.runner import ComponentReconciler, prepare_for
from reconciler.kube.cluster import Cluster
from reconciler.kube.diff import diff_object
from reconciler.model.plan import Plan
from reconciler.model.task import Task


async def diff_component_set(
    cluster: Cluster, reconciler: ComponentReconciler, plan: Plan, tasks: Mapping[str, Task]
) -> list[str]:
    """One unified diff (live -> desired) per object that a deploy would change, in plan order."""
    capabilities = await reconciler.capabilities(cluster)
    diffs: list[str] = []
    for name in plan.names():
        task = tasks[name]
        rendered = await reconciler.charts.render(task, capabilities)
        objects, _ = await prepare_for(cluster, task, rendered)
        for obj in objects:
            text = await diff_object(cluster, obj)
            if text:
                diffs.append(text)
    return diffs
