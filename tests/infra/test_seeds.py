"""Seeds as KIM reads them (which can take a shoot, in which regions, a shoot Gardener could not
place) and as the simulator's scheduler places Shoots: pure cases."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.devcluster.gardener import schedule, seed, selector_matches
from reconciler.infra.gardener import Gardener, GardenerError, RateLimiter
from reconciler.infra.skr import provisioning_info
from reconciler.model.seeds import no_matching_seeds, seed_regions, seed_usable
from tests.infra.samples import runtime


def altered(body: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """`body` with dotted paths set (`spec.settings.scheduling.visible=False`)."""
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = body
        for key in parents:
            target = target.setdefault(key, {})
        target[last] = value
    return body


def condition(kind: str, status: str) -> dict[str, str]:
    return {"type": kind, "status": status}


@pytest.mark.parametrize(
    ("body", "usable"),
    [
        (seed("a", "aws", "eu-central-1"), True),
        (seed("a", "aws", "eu-central-1", backup=True), True),
        (seed("a", "aws", "eu-central-1", backup=True, backup_ready=False), False),
        # without a backup its buckets do not matter
        (seed("a", "aws", "eu-central-1", backup_ready=False), True),
        (seed("a", "aws", "eu-central-1", visible=False), False),
        (altered(seed("a", "aws", "eu-central-1"), spec__settings={}), False),
        (seed("a", "aws", "eu-central-1", ready=False), False),
        (altered(seed("a", "aws", "eu-central-1"), status__lastOperation=None), False),
        (
            altered(
                seed("a", "aws", "eu-central-1"),
                status__conditions=[condition("GardenletReady", "False")],
            ),
            False,
        ),
        (
            altered(
                seed("a", "aws", "eu-central-1"),
                status__conditions=[condition("GardenletReady", "Unknown")],
            ),
            False,
        ),
        (
            altered(
                seed("a", "aws", "eu-central-1"), metadata__deletionTimestamp="2026-11-27T00:00:00Z"
            ),
            False,
        ),
        ({}, False),
    ],
)
def test_a_seed_is_usable_as_kim_judges_it(body: dict[str, Any], usable: bool) -> None:
    assert seed_usable(body) is usable


def test_the_regions_are_those_of_usable_seeds_of_the_provider_each_once() -> None:
    seeds = [
        seed("a1", "aws", "eu-central-1"),
        seed("a2", "aws", "eu-central-1"),
        seed("a3", "aws", "us-east-1"),
        seed("a4", "aws", "ap-south-1", ready=False),
        seed("a5", "aws", "eu-north-1", visible=False),
        seed("g1", "gcp", "europe-west3"),
    ]
    assert seed_regions(seeds, "aws") == ["eu-central-1", "us-east-1"]
    assert seed_regions(seeds, "gcp") == ["europe-west3"]
    assert seed_regions(seeds, "azure") == []


def pending(description: str) -> dict[str, Any]:
    return {
        "status": {
            "lastOperation": {"type": "Create", "state": "Pending", "description": description}
        }
    }


FAILED = "Failed to schedule Shoot: none out of the"
PROVIDER = "seeds has a matching provider for"


@pytest.mark.parametrize(
    ("shoot", "unschedulable"),
    [
        (pending(f'{FAILED} 3 {PROVIDER} "aws"'), True),
        (pending(f'{FAILED} 12 {PROVIDER} "openstack"'), True),
        (pending(f'{FAILED} 0 {PROVIDER} "gcp" (retrying)'), True),
        (pending(f"{FAILED} 3 seeds has the matching labels required by seed selector"), False),
        (pending(f'{FAILED} N {PROVIDER} "aws"'), False),
        (pending(f'Shoot reconciled. none out of the 3 {PROVIDER} "aws"'), False),
        (pending(""), False),
        ({"status": {}}, False),
        ({}, False),
        (None, False),
    ],
)
def test_a_shoot_gardener_could_not_schedule_is_recognised_by_its_description(
    shoot: dict[str, Any] | None, unschedulable: bool
) -> None:
    assert no_matching_seeds(shoot) is unschedulable


def shoot_in(provider: str, region: str, selector: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"provider": {"type": provider}, "region": region}
    if selector is not None:
        spec["seedSelector"] = selector
    return {"spec": spec}


SEEDS = [
    seed("b-aws", "aws", "eu-west-1"),
    seed("c-aws", "aws", "eu-central-1"),
    seed("a-aws", "aws", "us-east-1", ready=False),
    seed("g", "gcp", "europe-west3"),
]
REGION = {"matchLabels": {"seed.gardener.cloud/region": "eu-west-1"}}


@pytest.mark.parametrize(
    ("shoot", "chosen", "why"),
    [
        (shoot_in("aws", "eu-central-1"), "c-aws", ""),  # its own region first
        (shoot_in("aws", "ap-south-1"), "b-aws", ""),  # else the first usable by name
        (shoot_in("aws", "eu-central-1", REGION), "b-aws", ""),
        (
            shoot_in("azure", "westeurope"),
            None,
            'Failed to schedule Shoot: none out of the 3 seeds has a matching provider for "azure"',
        ),
        (
            shoot_in("aws", "x", {"matchLabels": {"seed.gardener.cloud/region": "x"}}),
            None,
            "Failed to schedule Shoot: none out of the 3 seeds has the matching labels",
        ),
    ],
)
def test_the_simulator_schedules_a_shoot_as_gardener_does(
    shoot: dict[str, Any], chosen: str | None, why: str
) -> None:
    got, reason = schedule(shoot, SEEDS)
    assert got == chosen
    assert reason.startswith(why)
    assert no_matching_seeds(pending(reason)) is ("matching provider" in why)


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        (None, True),
        ({"matchLabels": {"r": "1"}}, True),
        ({"matchLabels": {"r": "2"}}, False),
        ({"matchExpressions": [{"key": "r", "operator": "In", "values": ["1", "2"]}]}, True),
        ({"matchExpressions": [{"key": "r", "operator": "NotIn", "values": ["1"]}]}, False),
        ({"matchExpressions": [{"key": "z", "operator": "DoesNotExist"}]}, True),
        ({"matchExpressions": [{"key": "z", "operator": "Exists"}]}, False),
        ({"matchExpressions": [{"key": "r", "operator": "Bogus"}]}, False),
    ],
)
def test_a_seed_selector_matches_labels(selector: dict[str, Any] | None, matches: bool) -> None:
    assert selector_matches(selector, {"r": "1"}) is matches


def test_the_provisioning_info_carries_the_region_of_the_shoots_seed_as_kim() -> None:
    body = runtime("rt", "kcp-system")
    shoot = {"spec": {"seedName": "aws-eu2"}}
    info = provisioning_info(body, shoot, seed("aws-eu2", "aws", "eu-west-1"))
    assert info["seedRegion"] == "eu-west-1"
    assert info["region"] == "eu-central-1"
    assert "seedRegion" not in provisioning_info(body, shoot)  # not placed yet: left out


class _NoClient:
    async def request(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"nothing may be sent: {args}")


@pytest.mark.parametrize(
    "name", ["../../api/v1/secrets/x", "a/b", "x?dryRun=All", "%2e%2e", "..", "", "A", "a..b"]
)
async def test_the_gardener_client_reads_nothing_but_a_seed_by_its_name(name: str) -> None:
    gardener = Gardener(_NoClient(), "p", RateLimiter(None))  # type: ignore[arg-type]
    with pytest.raises(GardenerError, match="invalid Seed name") as refused:
        await gardener.get_seed(name)
    assert refused.value.retryable is False
