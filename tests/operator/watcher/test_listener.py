"""The listener takes events only over mutual TLS with a certificate of the operator's CA, and
only for the sender's own Kyma: a forged event (runtime A naming runtime B's Kyma) is refused
with 403 and logged; bad and oversized bodies are refused with a message naming the problem."""

from __future__ import annotations

import datetime as dt
import json

import httpx
import pytest
import structlog

from reconciler.operator.watcher.ca import CertificateAuthority, new_ca
from reconciler.operator.watcher.events import RemoteEvent
from reconciler.operator.watcher.listener import RUNTIME_ID
from tests.operator import modules
from tests.operator.watcher.conftest import Plane

DAY = dt.timedelta(days=1)


def _event(owner: str | None, namespace: str) -> dict[str, object]:
    body: dict[str, object] = {
        "watched": {"Namespace": "kyma-system", "Name": "default"},
        "watchedGvk": {"group": "operator.kyma-project.io", "version": "v1beta2", "kind": "Kyma"},
    }
    if owner is not None:
        body["owner"] = {"namespace": namespace, "name": owner}
    return body


async def _kymas(plane: Plane) -> None:
    for name, runtime in (("kyma-a", "runtime-a"), ("kyma-b", "runtime-b")):
        body = modules.kyma(plane.namespace, name, "regular", [])
        body["metadata"]["labels"] = {RUNTIME_ID: runtime, "operator.kyma-project.io/sync": "false"}
        await plane.control.apply(body)


async def test_an_event_of_the_kymas_own_runtime_is_published_and_a_forged_one_refused(
    plane: Plane,
) -> None:
    await _kymas(plane)
    seen: list[RemoteEvent] = []
    plane.operator.events.subscribe(seen.append)
    url = f"{plane.url}/v2/lifecycle-manager/event"
    async with plane.client(plane.ca.issue("runtime-a", [], DAY)) as client:
        with structlog.testing.capture_logs() as logs:
            forged = await client.post(url, json=_event("kyma-b", plane.namespace))
        assert forged.status_code == 403
        assert "runtime runtime-a may not report for Kyma kyma-b" in forged.json()["error"]
        refused = [line for line in logs if line["event"] == "watcher event refused"]
        assert refused
        assert refused[0]["runtime"] == "runtime-a"
        assert refused[0]["kyma"] == "kyma-b"
        assert refused[0]["log_level"] == "warning"
        assert seen == []

        accepted = await client.post(url, json=_event("kyma-a", plane.namespace))
        assert accepted.status_code == 200, accepted.text
    assert seen == [
        RemoteEvent(
            kyma_namespace=plane.namespace,
            kyma_name="kyma-a",
            runtime_id="runtime-a",
            group="operator.kyma-project.io",
            version="v1beta2",
            kind="Kyma",
            namespace="kyma-system",
            name="default",
        )
    ]


async def test_without_an_owner_the_kyma_named_by_the_runtime_is_meant(plane: Plane) -> None:
    body = modules.kyma(plane.namespace, "runtime-c", "regular", [])
    body["metadata"]["labels"] = {"operator.kyma-project.io/sync": "false"}
    await plane.control.apply(body)
    seen: list[RemoteEvent] = []
    plane.operator.events.subscribe(seen.append)
    url = f"{plane.url}/v2/lifecycle-manager/event"
    async with plane.client(plane.ca.issue("runtime-c", [], DAY)) as client:
        assert (await client.post(url, json=_event(None, plane.namespace))).status_code == 200
    async with plane.client(plane.ca.issue("runtime-x", [], DAY)) as client:
        assert (await client.post(url, json=_event(None, plane.namespace))).status_code == 403
    assert [e.kyma_name for e in seen] == ["runtime-c"]


async def test_no_certificate_or_one_of_another_ca_gets_no_connection(plane: Plane) -> None:
    url = f"{plane.url}/v2/lifecycle-manager/event"
    stranger = CertificateAuthority(new_ca("someone-else")).issue("runtime-a", [], DAY)
    for pair in (None, stranger):
        async with plane.client(pair) as client:
            with pytest.raises((httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError)):
                await client.post(url, json=_event("kyma-a", plane.namespace))


async def test_bad_bodies_are_refused_naming_the_problem(plane: Plane) -> None:
    await _kymas(plane)
    base = f"{plane.url}/v2"
    async with plane.client(plane.ca.issue("runtime-a", [], DAY)) as client:
        unknown = await client.post(f"{base}/someone/event", json=_event("kyma-a", plane.namespace))
        assert unknown.status_code == 404
        url = f"{base}/lifecycle-manager/event"
        not_json = await client.post(url, content=b"{nope")
        assert not_json.status_code == 400
        assert "not a JSON object" in not_json.json()["error"]
        bad = _event("kyma-a", plane.namespace)
        bad["watchedGvk"] = {"version": "v1", "kind": "Bad Kind!"}
        answer = await client.post(url, json=bad)
        assert answer.status_code == 400
        assert answer.json()["error"].startswith("watchedgvk.kind")
        missing = await client.post(url, json={"watched": {"name": "x"}})
        assert missing.status_code == 400
        assert "watchedgvk" in missing.json()["error"]
        huge = json.dumps({**_event("kyma-a", plane.namespace), "pad": "x" * 20000})
        assert (await client.post(url, content=huge)).status_code == 413
        # still serving afterwards
        ok = await client.post(url, json=_event("kyma-a", plane.namespace))
        assert ok.status_code == 200
