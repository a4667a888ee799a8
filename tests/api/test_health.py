"""Health: `/health/live` always answers; `/health/ready` reflects the readiness probe (the
database by default) and answers 503 without details when it fails or hangs."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import httpx

from reconciler.api import ApiSettings, create_app
from tests.api.support import Api, quiet_audit, running_api


async def test_live_and_ready_with_the_default_database_probe(api: Api) -> None:
    assert (await api.client.get("/health/live")).json() == {"status": "live"}
    assert (await api.client.get("/health/ready")).json() == {"status": "ready"}


async def _ready_status(api: Api, probe: object, timeout: float = 5.0) -> httpx.Response:
    app = create_app(
        api.engine.service,
        settings=ApiSettings(auth="none", ready_timeout=timeout),
        ready=probe,  # type: ignore[arg-type]
        audit=quiet_audit(),
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://t") as client:
        return await client.get("/health/ready")


async def test_failing_probe_is_503_without_details(api: Api) -> None:
    async def broken() -> bool:
        raise OSError("connection to postgres://user:pw@db refused")

    response = await _ready_status(api, broken)
    assert response.status_code == 503
    assert response.json() == {"error": "not ready"}


async def test_probe_answering_false_is_503(api: Api) -> None:
    async def no() -> bool:
        return False

    assert (await _ready_status(api, no)).status_code == 503


async def test_hanging_probe_is_503_after_the_timeout(api: Api) -> None:
    async def hang() -> bool:
        await asyncio.Event().wait()
        return True

    assert (await _ready_status(api, hang, timeout=0.05)).status_code == 503


async def test_unreachable_database_is_not_ready(tmp_path: Path) -> None:
    async with running_api(tmp_path, ApiSettings(auth="none"), run_loops=False) as api:
        assert (await api.client.get("/health/ready")).status_code == 200
        assert api.engine.db is not None
        for pool in (api.engine.db, api.engine.api_db):  # the engine's and the API's own
            await pool.dispose()  # drop pooled connections; new ones cannot open the file
        shutil.rmtree(tmp_path / "data")
        response = await api.client.get("/health/ready")
        assert response.status_code == 503
