"""A broker retrying a new cluster's first POST in parallel gets one answer per request, and the
inventory one version (before: unique violation, 500, on PostgreSQL)."""

from __future__ import annotations

import asyncio

from reconciler.mothership.engine import Engine
from tests.helpers.invokers import cluster_spec
from tests.mothership.conftest import SettingsFactory


async def test_parallel_first_upserts_all_succeed_with_one_version(
    store_settings: SettingsFactory,
) -> None:
    async with Engine(store_settings(), run_loops=False) as engine:
        spec = cluster_spec("rt-parallel", ("alpha", "beta"))
        states = await asyncio.gather(*(engine.service.upsert_cluster(spec) for _ in range(12)))
        assert {(s.cluster_version, s.config_version) for s in states} == {(1, 1)}
        history = await engine.inventory.history("rt-parallel")
        assert history == {"clusters": 1, "configs": 1, "statuses": 1}
