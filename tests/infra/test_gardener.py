"""The Gardener client boundary against the simulator: Shoots advance as Gardener's do, the
admin kubeconfig reaches the shoot apiserver, deletion needs Gardener's confirmation."""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from typing import Any

import pytest

from reconciler.devcluster.gardener import DURATION, FAULT
from reconciler.errors import KubeApiError
from reconciler.infra.gardener import API, GardenerError, RateLimiter
from reconciler.kube.client import KubeClient
from reconciler.util.polling import poll_until
from tests.infra.conftest import Garden
from tests.infra.samples import shoot


async def operation(garden: Garden, name: str, state: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        live = await garden.gardener.get_shoot(name)
        last = ((live or {}).get("status") or {}).get("lastOperation") or {}
        return live if last.get("state") == state else None

    result: dict[str, Any] = await poll_until(check, timeout=30, what=f"Shoot {name} {state}")
    return result


async def test_a_shoot_succeeds_and_its_admin_kubeconfig_works_against_the_shoot(
    garden: Garden,
) -> None:
    gardener = garden.gardener
    await refused_as_gardener_refuses(garden)  # a Shoot Gardener would refuse: refused
    await gardener.apply_shoot(shoot("s1", gardener.namespace))
    with pytest.raises(GardenerError, match="not created yet"):
        await gardener.admin_kubeconfig("s1", 600)
    live = await operation(garden, "s1", "Succeeded")
    assert live["status"]["lastOperation"]["type"] == "Create"
    assert "gardener" in live["metadata"]["finalizers"]
    kubeconfig, expires = await gardener.admin_kubeconfig("s1", 600)
    async with KubeClient.from_kubeconfig(kubeconfig, text=True) as client:
        assert "items" in await client.request("GET", "/api/v1/namespaces")
    assert 590 < (expires - dt.datetime.now(dt.UTC)).total_seconds() <= 601
    assert garden.simulator.requests["POST adminkubeconfig"] == 2


async def refused_as_gardener_refuses(garden: Garden) -> None:
    """Through the proxy as from Gardener: 422 Invalid naming the fields, 403 for a Shoot
    without a domain (no default domain here) or naming a ConfigMap that does not exist."""
    gardener = garden.gardener
    incomplete = shoot("s-bad", gardener.namespace)
    del incomplete["spec"]["provider"]["infrastructureConfig"]
    incomplete["spec"]["provider"]["workers"][0]["machine"]["image"]["version"] = ""
    with pytest.raises(GardenerError) as caught:
        await gardener.apply_shoot(incomplete)
    message = str(caught.value)
    assert 'Shoot.core.gardener.cloud "s-bad" is invalid' in message
    assert "spec.provider.infrastructureConfig: Required value" in message
    assert "spec.provider.workers[0].machine.image.version: Required value" in message
    assert not caught.value.retryable
    no_domain = shoot("s-bad", gardener.namespace)
    del no_domain["spec"]["dns"]
    with pytest.raises(GardenerError, match=r"spec\.dns\.domain must be set"):
        await gardener.apply_shoot(no_domain)
    referring = shoot("s-bad", gardener.namespace)
    server = referring["spec"]["kubernetes"]["kubeAPIServer"]
    server["structuredAuthentication"] = {"configMapName": "structured-auth-config-s-bad"}
    with pytest.raises(GardenerError, match=r"structured-auth-config-s-bad .* does not exist"):
        await gardener.apply_shoot(referring)
    assert await gardener.get_shoot("s-bad") is None
    # a garden with a default domain gives such a Shoot one, on every write, as Gardener does
    garden.simulator.default_domain = "dev.example.com"
    try:
        for _ in range(2):
            defaulted = await gardener.apply_shoot(
                {**no_domain, "metadata": {**no_domain["metadata"], "name": "s-dom"}}
            )
    finally:
        garden.simulator.default_domain = None
    project = gardener.namespace.removeprefix("garden-")
    assert defaulted["spec"]["dns"]["domain"] == f"s-dom.{project}.dev.example.com"


async def test_deletion_needs_the_confirmation_annotation_and_waits_for_gardener(
    garden: Garden,
) -> None:
    gardener = garden.gardener
    await gardener.apply_shoot(shoot("s2", gardener.namespace))
    await operation(garden, "s2", "Succeeded")
    with pytest.raises(KubeApiError, match=r"confirmation\.gardener\.cloud/deletion") as refused:
        await gardener.client.request("DELETE", f"{API}/namespaces/{gardener.namespace}/shoots/s2")
    assert refused.value.status == 403
    assert await gardener.delete_shoot("s2") is True
    await poll_until(
        lambda: _gone(garden, "s2"), timeout=30, what="Shoot s2 gone after Gardener deleted it"
    )
    assert await gardener.delete_shoot("s2") is False


async def _gone(garden: Garden, name: str) -> bool:
    return await garden.gardener.get_shoot(name) is None


@pytest.mark.parametrize(("fault", "state"), [("quota", "Error"), ("error", "Failed")])
async def test_injected_faults_show_as_gardener_reports_them(
    garden: Garden, fault: str, state: str
) -> None:
    gardener = garden.gardener
    await gardener.apply_shoot(shoot("s3", gardener.namespace, {FAULT: fault, DURATION: "0.1"}))
    live = await operation(garden, "s3", state)
    assert live["status"]["lastErrors"][0]["codes"]
    if fault == "quota":  # Gardener retries by itself: lifting the quota lets it succeed
        await gardener.annotate("s3", {FAULT: None})  # type: ignore[dict-item]
        await operation(garden, "s3", "Succeeded")


async def test_a_throttled_gardener_api_is_a_retryable_error(garden: Garden) -> None:
    garden.simulator.throttle(1)
    with pytest.raises(GardenerError) as raised:
        await garden.gardener.get_shoot("nothing")
    assert raised.value.retryable
    assert await garden.gardener.get_shoot("nothing") is None


async def test_the_rate_limiter_spaces_requests_across_all_callers() -> None:
    limiter = RateLimiter(20.0, burst=2)
    started = time.monotonic()
    await asyncio.gather(*(limiter.acquire() for _ in range(12)))
    assert time.monotonic() - started >= (12 - 2) / 20 * 0.95  # the burst, then 20/s
    unlimited = RateLimiter(None)
    started = time.monotonic()
    await asyncio.gather(*(unlimited.acquire() for _ in range(1000)))
    assert time.monotonic() - started < 1


async def test_a_late_wake_up_of_the_rate_limiter_is_credited_not_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a busy machine a sleep overshoots; the time overslept is tokens earned, so the
    achieved rate stays at the limit (it used to be dropped, costing ~15 % at load 15)."""
    now = [0.0]
    sleeps: list[float] = []

    async def late_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds + 0.05  # woke 50 ms late

    limiter = RateLimiter(100.0, burst=3, clock=lambda: now[0])
    monkeypatch.setattr("reconciler.infra.gardener.asyncio.sleep", late_sleep)
    for _ in range(3):
        await limiter.acquire()  # the burst
    await limiter.acquire()  # waits 10 ms, wakes 50 ms late: 6 tokens earned, 3 kept
    await limiter.acquire()
    await limiter.acquire()
    assert len(sleeps) == 1
