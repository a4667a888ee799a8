"""Contract: every endpoint of the reference external API answers with the reference's status
codes and bodies that validate against the reference's schemas (read from ../shared/reference).

One scenario walks a cluster through its life (upsert both ways, a running reconciliation with an
operation held back, stopping a `new` operation, failures, status changes, purge, delete) and
records every exchange; each is then validated against the schema the reference documents for
that path, method and status, and every reference operation must have answered at least once
with success (not only with errors). Formats checked: date-time and uri; `uuid` is not (the
original's IDs are `<runtimeID>--<uuid>` too). CI sets RECONCILER_REQUIRE_REFERENCE, so there
this test fails instead of skipping when the reference is missing.
"""

from __future__ import annotations

import datetime as dt
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jsonschema

from reconciler.api import ApiSettings
from reconciler.api.auth import Role
from reconciler.util.polling import poll_until
from tests.api.support import Api, Gate, Tokens, cluster_body, running_api

# Our route templates that the reference spells differently (both spellings are served).
ALIASES = {
    "/clusters/{}/configs/{}/status": "/clusters/{}/config/{}/status",
    "/clusters/{}/statusChanges/{}": "/clusters/{}/statusChanges",
}
# Path forms whose 200 body is a bare array of the reference form's list (the broker decodes
# `/statusChanges/{offset}` as `[]statusChange`): the shape and the list field it holds.
BARE_ARRAYS = {"/clusters/{}/statusChanges/{}": "statusChanges"}
# Answers the reference does not list for a path, and why they are right.
UNDOCUMENTED = {
    ("get", "/clusters/{}/config/{}", 404),  # unknown cluster/version: reference lists only 200
}


@dataclass(frozen=True)
class Exchange:
    method: str
    template: str
    status: int
    body: Any


def _shape(template: str) -> str:
    shape = re.sub(r"\{[^}]+\}", "{}", template.removeprefix("/v1"))
    return ALIASES.get(shape, shape)


def resolve(node: Any, spec: dict[str, Any]) -> Any:
    """The node with every local `$ref` replaced by what it points at (the spec has no cycles)."""
    if isinstance(node, dict):
        if "$ref" in node:
            target: Any = spec
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            return resolve(target, spec)
        return {key: resolve(value, spec) for key, value in node.items()}
    if isinstance(node, list):
        return [resolve(item, spec) for item in node]
    return node


def format_checker() -> jsonschema.FormatChecker:
    checker = jsonschema.FormatChecker(formats=())

    @checker.checks("date-time", raises=ValueError)
    def date_time(value: object) -> bool:
        return not isinstance(value, str) or dt.datetime.fromisoformat(value).tzinfo is not None

    @checker.checks("uri")
    def uri(value: object) -> bool:
        return bool(urllib.parse.urlsplit(str(value)).scheme)  # absolute: has a scheme

    return checker


def reference_operations(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method, _shape(path)): operation
        for path, item in spec["paths"].items()
        for method, operation in item.items()
    }


def problems_with(exchange: Exchange, spec: dict[str, Any]) -> list[str]:
    where = f"{exchange.method.upper()} {exchange.template} -> {exchange.status}"
    operation = reference_operations(spec).get((exchange.method, _shape(exchange.template)))
    if operation is None:
        return [f"{where}: not in the reference"]
    response = operation["responses"].get(str(exchange.status))
    if response is None:
        if (exchange.method, _shape(exchange.template), exchange.status) in UNDOCUMENTED:
            return []
        return [f"{where}: status not documented by the reference"]
    schema = resolve(response, spec).get("content", {}).get("application/json", {}).get("schema")
    if schema is None:
        return []
    shape = re.sub(r"\{[^}]+\}", "{}", exchange.template.removeprefix("/v1"))
    if shape in BARE_ARRAYS and exchange.status == 200:
        schema = schema["properties"][BARE_ARRAYS[shape]]
    validator = jsonschema.Draft7Validator(schema, format_checker=format_checker())
    return [
        f"{where}: {error.json_path}: {error.message}"
        for error in validator.iter_errors(exchange.body)
    ]


class Recorder:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.exchanges: list[Exchange] = []

    async def call(
        self, method: str, template: str, expect: int, *, json: Any = None, **params: Any
    ) -> Any:
        path = template.format(
            **{k: urllib.parse.quote(str(v), safe="") for k, v in params.items()}
        )
        query = params.pop("query", None)
        response = await self.client.request(method, path, json=json, params=query)
        body = response.json() if response.content else None
        self.exchanges.append(Exchange(method.lower(), template, response.status_code, body))
        assert response.status_code == expect, f"{method} {path}: {response.status_code} {body}"
        if expect >= 400:
            assert isinstance(body, dict), body
            assert isinstance(body.get("error"), str), body
        return body


async def _status(api: Api, runtime_id: str) -> str:
    response = await api.client.get(f"/v1/clusters/{runtime_id}/status")
    return str(response.json()["status"])


async def test_every_endpoint_answers_as_the_reference_documents(
    tmp_path: Path, tokens: Tokens, reference: dict[str, Any]
) -> None:
    gate = Gate("istio")
    settings = ApiSettings(tokens_file=tokens.path)
    async with running_api(
        tmp_path, settings, invoker=gate.factory, headers=tokens.header(Role.ADMIN)
    ) as api:
        r = Recorder(api.client)
        rt = "rt-contract"
        components = ("cluster-essentials", "istio", "serverless")
        body = cluster_body(rt, components=components)
        await r.call("POST", "/v1/clusters", 200, json=body)
        body_put = cluster_body(rt, components=components, kubeconfig_key="kubeConfig")
        await r.call("PUT", "/v1/clusters", 200, json=body_put)
        await r.call("GET", "/v1/clusters/{runtimeID}/status", 200, runtimeID=rt)

        await poll_until(lambda: _entered(gate), timeout=30, what="istio to be running")
        listed = await r.call("GET", "/v1/reconciliations", 200)
        scheduling_id = listed[0]["schedulingID"]
        info = await r.call(
            "GET", "/v1/reconciliations/{schedulingID}/info", 200, schedulingID=scheduling_id
        )
        ops = {op["component"]: op for op in info["operations"]}
        assert ops["serverless"]["state"] == "new"
        assert ops["istio"]["state"] == "in_progress"
        stop = "/v1/operations/{schedulingID}/{correlationID}/stop"
        new_op = ops["serverless"]["correlationID"]
        running_op = ops["istio"]["correlationID"]
        await r.call(
            "POST",
            stop,
            200,
            json={"reason": "test"},
            schedulingID=scheduling_id,
            correlationID=new_op,
        )
        await r.call(
            "POST",
            stop,
            403,
            json={"reason": "test"},
            schedulingID=scheduling_id,
            correlationID=running_op,
        )
        await r.call(
            "POST",
            stop,
            404,
            json={"reason": "x"},
            schedulingID=scheduling_id,
            correlationID="nope",
        )
        debug = "/v1/operations/{schedulingID}/{correlationID}/debug"
        await r.call("PUT", debug, 200, schedulingID=scheduling_id, correlationID=new_op)
        await r.call("PUT", debug, 404, schedulingID=scheduling_id, correlationID="nope")
        await r.call(
            "PUT", "/v1/reconciliations/{schedulingID}/debug", 200, schedulingID=scheduling_id
        )
        await r.call("PUT", "/v1/reconciliations/{schedulingID}/debug", 404, schedulingID="nope")

        state = "/v1/clusters/state"
        await r.call("GET", state, 200, query={"runtimeID": rt})
        await r.call("GET", state, 200, query={"schedulingID": scheduling_id})
        await r.call("GET", state, 200, query={"correlationID": new_op})
        await r.call("GET", state, 400)
        await r.call("GET", state, 404, query={"runtimeID": "nope"})

        gate.release.set()
        await poll_until(
            lambda: _reached(api, rt, "error"), timeout=30, what="the stopped run to end in error"
        )
        failed = await r.call("GET", "/v1/clusters/{runtimeID}/status", 200, runtimeID=rt)
        assert [f["component"] for f in failed["failures"]] == ["serverless"]

        await r.call(
            "GET", "/v1/clusters/{runtimeID}/config/{version}", 200, runtimeID=rt, version=1
        )
        await r.call(
            "GET", "/v1/clusters/{runtimeID}/config/{version}", 404, runtimeID=rt, version=9
        )
        for segment in ("config", "configs"):
            template = f"/v1/clusters/{{runtimeID}}/{segment}/{{configVersion}}/status"
            await r.call("GET", template, 200, runtimeID=rt, configVersion=1)
            await r.call("GET", template, 404, runtimeID=rt, configVersion=9)
            await r.call("GET", template, 400, runtimeID=rt, configVersion="one")
        changes = "/v1/clusters/{runtimeID}/statusChanges"
        await r.call("GET", changes, 200, runtimeID=rt, query={"offset": "1h"})
        await r.call("GET", changes, 200, runtimeID=rt)
        await r.call("GET", changes, 400, runtimeID=rt, query={"offset": "a week"})
        await r.call("GET", changes, 404, runtimeID="nope")
        await r.call("GET", changes + "/{offset}", 200, runtimeID=rt, offset="168h")
        await r.call(
            "GET",
            "/v1/reconciliations",
            200,
            query={"runtimeID": [rt, "other"], "status": ["error"], "last": 5},
        )
        await r.call("GET", "/v1/reconciliations", 400, query={"status": "sleeping"})
        await r.call("GET", "/v1/reconciliations", 400, query={"after": "yesterday"})

        status = "/v1/clusters/{runtimeID}/status"
        await r.call("PUT", status, 201, json={"status": "reconcile_disabled"}, runtimeID=rt)
        await r.call("PUT", status, 201, json={"status": "ready"}, runtimeID=rt)
        await r.call("PUT", status, 400, json={"status": "deleted"}, runtimeID=rt)
        await r.call("PUT", status, 400, json={"status": "sleeping"}, runtimeID=rt)
        await r.call("PUT", status, 404, json={"status": "ready"}, runtimeID="nope")
        await r.call("GET", status, 404, runtimeID="nope")
        await r.call("POST", "/v1/clusters", 400, json={"runtimeID": rt})

        await r.call("DELETE", "/v1/reconciliations/cluster/{runtimeID}", 200, runtimeID=rt)
        await r.call("DELETE", "/v1/clusters/{runtimeID}", 200, runtimeID=rt)
        await r.call("DELETE", "/v1/clusters/{runtimeID}", 404, runtimeID="nope")

    problems = [p for exchange in r.exchanges for p in problems_with(exchange, reference)]
    assert not problems, "\n".join(problems)
    exercised = {(e.method, _shape(e.template)) for e in r.exchanges}
    missing = set(reference_operations(reference)) - exercised
    assert not missing, f"reference operations not exercised: {sorted(missing)}"
    succeeded = {(e.method, _shape(e.template)) for e in r.exchanges if 200 <= e.status < 300}
    unsucceeded = set(reference_operations(reference)) - succeeded
    assert not unsucceeded, f"reference operations without a success answer: {sorted(unsucceeded)}"


async def _entered(gate: Gate) -> bool:
    return gate.entered.is_set()


async def _reached(api: Api, runtime_id: str, status: str) -> bool:
    return await _status(api, runtime_id) == status
