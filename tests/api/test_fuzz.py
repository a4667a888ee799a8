"""Property-based fuzzing of our own OpenAPI document with schemathesis: for every operation,
valid and invalid requests (positive and negative generation) never get a 5xx, refused requests
answer `{"error": ...}` and leave the database exactly as it was, and accepted responses match
the schemas we publish.

The engine runs without its loops (only requests change the database) on an event loop this
test drives itself, so hypothesis' synchronous examples and the async app share one loop.
A cluster `0` (what generated identifiers shrink to) is seeded with a scheduled reconciliation,
and a `seeded` pass fills path IDs with its IDs, so generated requests also reach existing
objects. Examples are derandomized (reproducible).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import response_schema_conformance

from reconciler.api import ApiSettings, create_app
from reconciler.api.auth import Role
from reconciler.model.cluster import ClusterSpec
from reconciler.mothership.engine import Engine
from reconciler.mothership.service import MothershipService
from reconciler.observability.audit import AuditLog
from tests.api.support import (
    KUBECONFIG,
    Tokens,
    accept_kubeconfig,
    cluster_body,
    engine_settings,
    noop_invoker,
    quiet_audit,
    snapshot,
)

EXAMPLES = 30
BASE = "http://testserver"


def _operations() -> list[tuple[str, str]]:
    service = cast(MothershipService, object())
    app = create_app(service, settings=ApiSettings(auth="none"), audit=quiet_audit())
    return [
        (method.upper(), path)
        for path, item in app.openapi()["paths"].items()
        for method in item
        if path.startswith("/v1/")
    ]


OPERATIONS = _operations()


SEEDED = "seeded"
"""Generation mode: positive, with the path's IDs those of the seeded cluster/reconciliation."""


def _cases() -> list[tuple[str, str, str]]:
    modes = [GenerationMode.POSITIVE.value, GenerationMode.NEGATIVE.value]
    return [
        (method, path, mode)
        for method, path in OPERATIONS
        for mode in modes + ([SEEDED] if "ID}" in path else [])
    ]


CASES = _cases()


@dataclass
class World:
    loop: asyncio.AbstractEventLoop
    engine: Engine
    client: httpx.AsyncClient
    schema: Any
    admin: str
    ids: dict[str, str]

    def run(self, coroutine: Any) -> Any:
        return self.loop.run_until_complete(coroutine)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One engine for the module: every example checks its own before/after snapshot."""
    tmp_path = tmp_path_factory.mktemp("fuzz")
    loop = asyncio.new_event_loop()
    tokens = Tokens.write(tmp_path)
    engine = Engine(engine_settings(tmp_path / "data"), invoker=noop_invoker, run_loops=False)
    loop.run_until_complete(engine.start())
    audit = AuditLog.to_file(tmp_path / "audit.log")
    app = create_app(
        engine.service,
        settings=ApiSettings(tokens_file=tokens.path),
        check_kubeconfig=accept_kubeconfig,
        audit=audit,
    )
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE)
    spec = ClusterSpec.model_validate(cluster_body("0"))
    loop.run_until_complete(engine.service.upsert_cluster(spec))
    loop.run_until_complete(engine.scheduler.sweep())  # a reconciliation with `new` operations
    (reconciliation,) = loop.run_until_complete(engine.service.reconciliations())
    _, ops = loop.run_until_complete(engine.service.reconciliation(reconciliation.scheduling_id))
    ids = {
        "runtimeID": "0",
        "schedulingID": reconciliation.scheduling_id,
        "correlationID": ops[-1].correlation_id,
        "configVersion": "1",
    }
    schema = schemathesis.openapi.from_dict(app.openapi())
    try:
        yield World(loop, engine, client, schema, tokens.by_role[Role.ADMIN], ids)
    finally:
        loop.run_until_complete(client.aclose())
        loop.run_until_complete(engine.stop())
        audit.close()
        loop.close()


def _send(world: World, case: Any) -> httpx.Response:
    kwargs = case.as_transport_kwargs(base_url=BASE)
    headers = {str(k): str(v) for k, v in (kwargs.get("headers") or {}).items()}
    headers["Authorization"] = f"Bearer {world.admin}"
    request: dict[str, Any] = {"params": kwargs.get("params"), "headers": headers}
    if "json" in kwargs:
        body = kwargs["json"]
        if isinstance(body, dict) and isinstance(body.get("kubeconfig"), str):
            body = {**body, "kubeconfig": KUBECONFIG}  # reach the store; kubeconfigs: elsewhere
        request["json"] = body
    elif kwargs.get("data") is not None:
        data = kwargs["data"]
        request["content"] = data if isinstance(data, bytes) else str(data).encode()
    return cast(
        httpx.Response, world.run(world.client.request(kwargs["method"], kwargs["url"], **request))
    )


def _check(world: World, case: Any) -> None:
    before = world.run(snapshot(world.engine))
    response = _send(world, case)
    where = f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}"
    assert response.status_code < 500, where
    if response.status_code >= 400:
        assert isinstance(response.json().get("error"), str), where
        assert world.run(snapshot(world.engine)) == before, f"partial write: {where}"
    else:
        case.validate_response(response, checks=[response_schema_conformance])


@pytest.mark.parametrize(("method", "path", "mode"), CASES, ids=[" ".join(c) for c in CASES])
def test_fuzzed_requests_get_no_5xx_and_rejected_ones_write_nothing(
    world: World, method: str, path: str, mode: str
) -> None:
    operation = world.schema[path][method]
    if mode == SEEDED:
        names = [p.name for p in operation.path_parameters]
        fixed = {name: world.ids[name] for name in names if name in world.ids}
        strategy = operation.as_strategy(GenerationMode.POSITIVE, path_parameters=fixed)
    else:
        strategy = operation.as_strategy(GenerationMode(mode))

    @given(case=strategy)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def fuzz(case: Any) -> None:
        _check(world, case)

    fuzz()
