"""The console's health (no browser): the fleet counts and filters by health, a failing cluster
is red (`h-failing`) with its root cause while its retries run, the history colours by health,
and Delete / Forget exist for admins only."""

from __future__ import annotations

import asyncio
from pathlib import Path

from reconciler.api import ApiSettings
from reconciler.api.auth import Role
from reconciler.model.cluster import ClusterState
from reconciler.model.operation import Operation
from reconciler.mothership.invoker import CallableInvoker, Invoker, InvokeResult
from reconciler.mothership.planner import Planner
from reconciler.util.polling import poll_until
from tests.api.console.test_fragments import as_role
from tests.api.support import Tokens, cluster_body, running_api


def failing_istio(_planner: Planner) -> Invoker:
    async def invoke(op: Operation, state: ClusterState) -> InvokeResult:
        if state.runtime_id == "rt-bad" and op.component == "istio":
            return InvokeResult(False, "component istio: istiod not ready", transient=True)
        return InvokeResult(True)

    return CallableInvoker(invoke)


async def test_failing_is_counted_filtered_and_red_through_its_retries(
    tmp_path: Path, tokens: Tokens
) -> None:
    async with running_api(
        tmp_path,
        ApiSettings(tokens_file=tokens.path),
        invoker=failing_istio,
        headers=tokens.header(Role.ADMIN),
        retry_interval=0.3,
        max_retries=0,
    ) as api:
        for name in ("rt-ok", "rt-bad"):
            assert (await api.client.post("/v1/clusters", json=cluster_body(name))).is_success

        async def settled() -> bool:
            healths = [
                (await api.client.get(f"/v1/clusters/{n}/health")).json()["health"]
                for n in ("rt-ok", "rt-bad")
            ]
            return healths == ["healthy", "failing"]

        await poll_until(settled, timeout=30, what="rt-ok healthy and rt-bad failing")

        async def failures() -> int:
            health = (await api.client.get("/v1/clusters/rt-bad/health")).json()
            return int(health["consecutiveFailures"])

        start = await failures()
        while await failures() < start + 2:  # retries run: the status moves, the health not
            fleet = (await api.client.get("/ui/fragments/fleet")).text
            assert 'data-health-count="failing">1<' in fleet
            assert 'data-health-count="healthy">1<' in fleet
            summary = (await api.client.get("/ui/fragments/clusters/rt-bad/summary")).text
            assert 'class="health h-failing" id="cluster-health">failing<' in summary
            assert "istiod not ready" in summary
            await asyncio.sleep(0.05)
        only_failing = await api.client.get("/ui/fragments/fleet", params={"health": "failing"})
        assert 'href="/ui/clusters/rt-bad"' in only_failing.text
        assert 'href="/ui/clusters/rt-ok"' not in only_failing.text
        history = (await api.client.get("/ui/fragments/clusters/rt-bad/history")).text
        assert 'class="health h-failing">failing</span> <span class="status st-reconciling"' in (
            history
        )
        assert "st-reconcile_error_retryable" in history  # the raw status, in red (css)
        page = (await api.client.get("/ui/", params={"health": "failing"})).text
        assert '<option value="failing" selected>' in page

        seen = {}
        for role in (Role.OPERATOR, Role.ADMIN):
            async with as_role(api, tokens, role) as client:
                seen[role] = (await client.get("/ui/fragments/clusters/rt-bad/summary")).text
        assert 'data-action="delete"' not in seen[Role.OPERATOR]
        assert 'data-action="forget"' not in seen[Role.OPERATOR]
        assert 'data-action="delete"' in seen[Role.ADMIN]
        assert 'data-action="forget" data-health="failing"' in seen[Role.ADMIN]
    css = (Path(__file__).parents[3] / "src/reconciler/api/console/static/console.css").read_text()
    assert ".h-failing, .h-unreachable { color: var(--bad)" in css
