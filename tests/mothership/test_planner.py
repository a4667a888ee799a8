"""A component's task names its secret configuration keys, and they reach a component
reconciler, which can then scrub the values from what it reports."""

from __future__ import annotations

from reconciler.model.operation import Operation
from reconciler.model.remote import RemoteTask
from reconciler.model.status import OperationState, OperationType
from reconciler.mothership.planner import Planner
from reconciler.mothership.settings import Settings
from tests.helpers.clusters import cluster_spec, reconciling


def test_the_secret_configuration_keys_travel_with_the_task_to_a_component_reconciler() -> None:
    configuration = [
        {"key": "db.password", "value": "hunter2-secret-value", "secret": True},
        {"key": "replicas", "value": 2},
    ]
    base = cluster_spec("rt")
    kyma = {"version": "1", "components": [{"component": "web", "URL": "/charts/web"}]}
    kyma["components"][0]["configuration"] = configuration
    spec = base.model_copy(update={"kyma_config": base.kyma_config.model_validate(kyma)})
    state = reconciling(spec)
    now = state.status_changed
    op = Operation(
        "s", "c", "rt", 1, 1, "web", "default", OperationType.RECONCILE,
        OperationState.NEW, "", 0, False, "", now, now,
    )  # fmt: skip
    task = Planner(Settings()).task(state, op, timeout=60)
    assert task.secret_keys == ("db.password",)
    wire = RemoteTask.of(task, kubeconfig="k", callback_url="http://cb", max_retries=0)
    received = RemoteTask.model_validate_json(wire.model_dump_json(by_alias=True))
    assert received.secret_values() == ["hunter2-secret-value"]
