"""`/metrics` of a running mothership: the cluster-status gauges are refreshed by the engine (not
only at start) and are right again at once after a restart; the separate metrics listener
serves them without authentication."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from reconciler.api import ApiSettings
from reconciler.api.auth import Role
from reconciler.api.server import metrics_app
from reconciler.util.polling import poll_until
from tests.api.support import Api, Tokens, cluster_body, running_api

RUNTIMES = [f"rt-metrics-{i}" for i in range(4)]


def cluster_statuses(text: str) -> dict[str, str]:
    return {
        runtime: status
        for runtime, status in re.findall(
            r'reconciler_cluster_status\{runtime_id="([^"]+)",status="([^"]+)"\} 1\.0', text
        )
    }


async def scraped(api: Api, tokens: Tokens) -> dict[str, str]:
    response = await api.client.get("/metrics", headers=tokens.header(Role.VIEWER))
    assert response.status_code == 200, response.text
    return cluster_statuses(response.text)


async def test_cluster_status_gauges_follow_the_inventory_and_survive_a_restart(
    tmp_path: Path, tokens: Tokens
) -> None:
    settings = ApiSettings(tokens_file=tokens.path)
    headers = tokens.header(Role.ADMIN)
    async with running_api(tmp_path, settings, headers=headers) as api:
        for runtime in RUNTIMES:
            await api.client.post("/v1/clusters", json=cluster_body(runtime))

        async def all_ready() -> dict[str, str] | None:
            found = await scraped(api, tokens)
            return found if found == dict.fromkeys(RUNTIMES, "ready") else None

        await poll_until(all_ready, timeout=30, what="4 ready clusters in /metrics")
        await api.client.put(
            f"/v1/clusters/{RUNTIMES[0]}/status", json={"status": "reconcile_disabled"}
        )

        async def disabled() -> bool:
            return (await scraped(api, tokens))[RUNTIMES[0]] == "reconcile_disabled"

        await poll_until(disabled, timeout=30, what="the disabled cluster in /metrics")

    async with running_api(tmp_path, settings, headers=headers, sweep_interval=3600) as again:

        async def restored() -> dict[str, str] | None:
            found = await scraped(again, tokens)
            return found if len(found) == len(RUNTIMES) else None

        found = await poll_until(restored, timeout=30, what="the clusters after a restart")
        assert found == {**dict.fromkeys(RUNTIMES, "ready"), RUNTIMES[0]: "reconcile_disabled"}


async def test_separate_metrics_listener_serves_without_a_token(
    tmp_path: Path, tokens: Tokens
) -> None:
    settings = ApiSettings(tokens_file=tokens.path, metrics_port=9090)
    async with running_api(tmp_path, settings, headers=tokens.header(Role.ADMIN)) as api:
        await api.client.post("/v1/clusters", json=cluster_body("rt-separate"))
        transport = httpx.ASGITransport(metrics_app(api.engine))
        async with httpx.AsyncClient(transport=transport, base_url="http://metrics") as scraper:

            async def listed() -> bool:
                response = await scraper.get("/metrics")
                return "rt-separate" in cluster_statuses(response.text)

            await poll_until(listed, timeout=30, what="the cluster on the metrics listener")


async def test_every_scrape_has_process_build_and_http_series_and_no_created_series(
    tmp_path: Path, tokens: Tokens
) -> None:
    settings = ApiSettings(tokens_file=tokens.path)
    async with running_api(tmp_path, settings, headers=tokens.header(Role.ADMIN)) as api:
        await api.client.post("/v1/clusters", json=cluster_body("rt-http"))
        missing = await api.client.get("/v1/clusters/rt-nobody/status")
        assert missing.status_code == 404

        async def pool_refreshed() -> str | None:
            response = await api.client.get("/metrics", headers=tokens.header(Role.VIEWER))
            return response.text if "reconciler_db_pool_connections{" in response.text else None

        text = await poll_until(pool_refreshed, timeout=30, what="the pool gauges in /metrics")

    assert "process_resident_memory_bytes " in text
    assert "python_gc_objects_collected_total{" in text
    assert re.search(r'reconciler_build_info\{python="[^"]+",role="mothership",version="', text)
    assert re.search(
        r'reconciler_http_requests_total\{code="404",method="GET",'
        r'route="/v1/clusters/\{runtimeID\}/status"\} 1\.0',
        text,
    ), text
    assert re.search(
        r'reconciler_http_requests_total\{code="200",method="POST",route="/v1/clusters"', text
    )
    assert 'reconciler_http_request_duration_seconds_bucket{le="0.005",method="GET"' in text
    assert "_created" not in text
    overflow = re.search(r'reconciler_db_pool_connections\{kind="overflow"\} (\S+)', text)
    assert overflow is None or float(overflow.group(1)) >= 0
