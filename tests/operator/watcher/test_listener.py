"""The listener takes events only over mutual TLS with a certificate of the operator's CA, and
only for the sender's own Kyma: a forged event (runtime A naming runtime B's Kyma) is refused
with 403 and logged; bad and oversized bodies are refused with a message naming the problem."""

from __future__ import annotations

import datetime as dt
import json
import time

import httpx
import pytest
import structlog

from reconciler.operator.watcher.ca import CertificateAuthority, new_ca
from reconciler.operator.watcher.events import RemoteEvent
from reconciler.operator.watcher.listener import RUNTIME_ID, reports_for
from reconciler.util.polling import poll_until
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


async def _unlabelled_kyma(plane: Plane, namespace: str, name: str) -> list[RemoteEvent]:
    """A Kyma without a runtime-id label; the events published from now on."""
    body = modules.kyma(namespace, name, "regular", [])
    body["metadata"]["labels"] = {"operator.kyma-project.io/sync": "false"}
    await plane.control.apply(body)
    seen: list[RemoteEvent] = []
    plane.operator.events.subscribe(seen.append)
    return seen


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
    seen = await _unlabelled_kyma(plane, plane.namespace, "runtime-c")
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


async def test_deeply_nested_json_is_a_400_naming_the_depth(plane: Plane) -> None:
    await _kymas(plane)
    url = f"{plane.url}/v2/lifecycle-manager/event"
    async with plane.client(plane.ca.issue("runtime-a", [], DAY)) as client:
        deep = await client.post(url, content=b"[" * 8000 + b"]" * 8000)  # past the parser
        assert deep.status_code == 400, deep.text
        assert "nested more than 64 levels deep" in deep.json()["error"]
        padded = json.dumps({**_event("kyma-a", plane.namespace), "pad": [[[[0]]]] * 1})
        padded = padded.replace("[[[[0]]]]", "[" * 100 + "0" + "]" * 100)
        answer = await client.post(url, content=padded)  # parses, but deeper than the API allows
        assert answer.status_code == 400, answer.text
        assert "nested more than 64 levels deep" in answer.json()["error"]
        ok = await client.post(url, json=_event("kyma-a", plane.namespace))
        assert ok.status_code == 200


async def test_an_unlabelled_kyma_of_the_runtimes_name_elsewhere_is_not_the_runtimes(
    plane: Plane,
) -> None:
    """runtime-a's certificate wakes only the Kyma labelled runtime-a (or, unlabelled, the one
    named runtime-a in the listener's Kyma namespace): not an unlabelled `runtime-a` in another
    namespace, the operator's or not."""
    await _kymas(plane)
    other = f"{plane.namespace[:50]}-other"
    space = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}
    await plane.control.apply(space)
    try:
        seen = await _unlabelled_kyma(plane, other, "runtime-a")
        url = f"{plane.url}/v2/lifecycle-manager/event"
        async with plane.client(plane.ca.issue("runtime-a", [], DAY)) as client:
            answer = await client.post(url, json=_event("runtime-a", other))
            assert answer.status_code == 403, answer.text
        assert seen == []
    finally:
        await plane.control.delete(space)


def test_a_kyma_answers_for_its_label_or_unlabelled_for_its_name_in_the_kyma_namespace() -> None:
    def kyma(namespace: str, name: str, label: str | None = None) -> dict[str, object]:
        labels = {RUNTIME_ID: label} if label else {}
        return {"metadata": {"namespace": namespace, "name": name, "labels": labels}}

    assert reports_for(kyma("kcp", "k", "rt"), "rt", "kcp", None) is None
    assert reports_for(kyma("team", "k", "rt"), "rt", "kcp", None) is None
    assert reports_for(kyma("kcp", "rt"), "rt", "kcp", None) is None
    assert reports_for(kyma("team", "rt"), "rt", "kcp", None) is not None
    assert reports_for(kyma("kcp", "rt", "other"), "rt", "kcp", None) is not None
    assert reports_for(kyma("team", "k", "rt"), "rt", "kcp", "kcp") is not None


@pytest.mark.parametrize(
    "plane",
    [{"events_rate": 0.01, "events_burst": 30, "refusal_window": 600, "event_coalesce": 8}],
    indirect=True,
)
async def test_events_are_limited_per_runtime_coalesced_per_kyma_and_refusals_aggregated(
    plane: Plane,
) -> None:
    runs: list[str] = []
    handle = plane.operator.kymas.handle

    async def counted(namespace: str, name: str) -> float | None:
        if namespace == plane.namespace:
            runs.append(name)
        return await handle(namespace, name)

    plane.operator.kymas.handle = counted  # type: ignore[method-assign]
    key = ("Kyma", plane.namespace, "kyma-a")
    queue = plane.operator.queue

    async def settled() -> bool | None:
        due = queue._due.get(key)
        idle = key not in queue._active and (due is None or due - time.monotonic() > 10)
        return (idle and "kyma-a" in runs) or None

    await _kymas(plane)
    await poll_until(settled, timeout=30, what="the Kyma's first run")  # its creation's
    runs.clear()
    url = f"{plane.url}/v2/lifecycle-manager/event"
    statuses: list[int] = []
    async with plane.client(plane.ca.issue("runtime-a", [], DAY)) as client:
        with structlog.testing.capture_logs() as logs:
            for _ in range(30):
                answer = await client.post(url, json=_event("kyma-a", plane.namespace))
                statuses.append(answer.status_code)
            limited = await client.post(url, json=_event("kyma-a", plane.namespace))
            for _ in range(20):
                await client.post(url, json=_event("kyma-b", plane.namespace))
    assert statuses == [200] * 30
    assert limited.status_code == 429
    assert int(limited.headers["Retry-After"]) >= 1
    refused = [line for line in logs if line["event"] == "watcher event refused"]
    assert len(refused) == 1, refused  # 21 refusals, one line this window
    assert refused[0]["runtime"] == "runtime-a"
    # another runtime has its own bucket
    async with plane.client(plane.ca.issue("runtime-b", [], DAY)) as client:
        other = await client.post(url, json=_event("kyma-b", plane.namespace))
        assert other.status_code == 200
    await poll_until(settled, timeout=30, what="the Kyma's requeue ran")
    print("kyma-a runs", runs.count("kyma-a"))
    assert runs.count("kyma-a") <= 2, runs  # 30 events: one run at once, one pending requeue
