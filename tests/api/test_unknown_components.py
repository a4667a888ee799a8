"""Components the Kyma version's workspace does not know: accepted by default and failed in
their own operation with `unknown component ...` (the broker treats a 400 as permanent, the
original failed the operation instead); refused at once with `reject_unknown_components`.

The invoker plans every task with the engine's real planner (where an unknown component is
found) and skips the cluster work, so no cluster is needed."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from reconciler.api import ApiSettings
from reconciler.api.app import planner_validator
from reconciler.api.auth import Role
from reconciler.api.context import SpecValidator
from reconciler.model.cluster import ClusterState
from reconciler.model.operation import Operation
from reconciler.mothership.engine import Engine
from reconciler.mothership.invoker import CallableInvoker, Invoker, InvokeResult
from reconciler.mothership.planner import Planner
from reconciler.util.polling import poll_until
from tests.api.support import REPO_ROOT, Api, Tokens, cluster_body, running_api, snapshot

WORKSPACE = REPO_ROOT / "examples" / "kyma-like"


def planning_invoker(planner: Planner) -> Invoker:
    async def invoke(op: Operation, state: ClusterState) -> InvokeResult:
        planner.task(state, op, timeout=10)  # raises for a component without a chart
        return InvokeResult(True)

    return CallableInvoker(invoke)


def workspace_body(runtime_id: str) -> dict[str, object]:
    body = cluster_body(runtime_id, components=("istio", "flux-capacitor"))
    for component in body["kymaConfig"]["components"]:  # type: ignore[index]
        component["URL"] = ""  # charts come from the workspace
    return body


def serving(tmp_path: Path, tokens: Tokens, **settings: Any) -> AbstractAsyncContextManager[Api]:
    """The API with the mothership's own spec check, over the example workspace."""
    api_settings = ApiSettings(tokens_file=tokens.path, **settings)
    validator: Callable[[Engine], SpecValidator] = lambda engine: planner_validator(  # noqa: E731
        engine.planner, api_settings
    )
    return running_api(
        tmp_path,
        api_settings,
        invoker=planning_invoker,
        spec_validator=validator,
        headers=tokens.header(Role.ADMIN),
        workspace=WORKSPACE,
    )


async def test_unknown_component_is_accepted_and_its_operation_fails_naming_it(
    tmp_path: Path, tokens: Tokens
) -> None:
    async with serving(tmp_path, tokens) as api:
        created = await api.client.post("/v1/clusters", json=workspace_body("rt-unknown"))
        assert created.status_code == 200, created.text

        async def failed() -> dict[str, object] | None:
            body: dict[str, object] = (
                await api.client.get("/v1/clusters/rt-unknown/status")
            ).json()
            return body if body["status"] == "error" else None

        status = await poll_until(failed, timeout=30, what="rt-unknown to fail")
        failures = status["failures"]
        assert isinstance(failures, list)
        assert len(failures) == 1, failures
        assert failures[0]["component"] == "flux-capacitor"
        assert "unknown component 'flux-capacitor'" in failures[0]["reason"]
        runs = (await api.client.get("/v1/reconciliations?runtimeID=rt-unknown")).json()
        info = (await api.client.get(f"/v1/reconciliations/{runs[0]['schedulingID']}/info")).json()
        states = {op["component"]: op["state"] for op in info["operations"]}
        assert states == {"CRDs": "done", "istio": "done", "flux-capacitor": "error"}


async def test_reject_unknown_components_setting_refuses_the_upsert_early(
    tmp_path: Path, tokens: Tokens
) -> None:
    async with serving(tmp_path, tokens, reject_unknown_components=True) as api:
        before = await snapshot(api.engine)
        refused = await api.client.post("/v1/clusters", json=workspace_body("rt-refused"))
        assert refused.status_code == 400, refused.text
        assert "unknown component 'flux-capacitor'" in refused.json()["error"]
        assert await snapshot(api.engine) == before
