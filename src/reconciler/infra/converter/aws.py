"""AWS (`aws.provider.extensions.gardener.cloud/v1alpha1`): a VPC of the nodes CIDR and, per
zone, three subnets (workers, public, internal). The first three zones (the Kyma worker pool's)
get a /(n+3) workers and two /(n+4) subnets; zones four to eight three /(n+6) each, after them.
With `10.250.0.0/16`: zone a `10.250.0.0/19`, `10.250.32.0/20`, `10.250.48.0/20`; zone b from
`10.250.64.0`; zone d `10.250.192.0/22`, `.196.0/22`, `.200.0/22`."""

from __future__ import annotations

from reconciler.infra.converter.base import (
    Config,
    ConversionError,
    ProviderConverter,
    envelope,
    network,
    subnet,
    unique,
)

API_VERSION = "aws.provider.extensions.gardener.cloud/v1alpha1"
MAX_ZONES = 8
LARGE_ZONES = 3
IMDS_HOP_LIMIT = 2


def zones_of(nodes: str, zones: list[str]) -> list[Config]:
    if not 1 <= len(zones) <= MAX_ZONES:
        raise ConversionError(f"{len(zones)} zones: between 1 and {MAX_ZONES} are supported")
    net = network(nodes)
    large = net.prefixlen + 3
    small = large + 3
    step_large = 1 << (32 - large - 1)  # half a /large block
    step_small = step_large >> 2
    base = int(net.network_address)
    result = []
    for index, name in enumerate(unique(zones)):
        if index < LARGE_ZONES:
            workers = subnet(base, large, net)
            public = subnet(base + 2 * step_large, large + 1, net)
            internal = subnet(base + 3 * step_large, large + 1, net)
            base += 4 * step_large
        else:
            workers = subnet(base, small, net)
            public = subnet(base + step_small, small, net)
            internal = subnet(base + 2 * step_small, small, net)
            base += 3 * step_small
        result.append({"name": name, "workers": workers, "public": public, "internal": internal})
    return result


def infrastructure(
    nodes: str, zones: list[str], *, dual_stack: bool, existing: Config | None
) -> Config:
    config = envelope(
        API_VERSION,
        "InfrastructureConfig",
        networks={"vpc": {"cidr": nodes}, "zones": zones_of(nodes, zones)},
    )
    if dual_stack and existing is None:
        config["dualStack"] = {"enabled": True}
    if existing is not None:
        # what Gardener or an operator set on the existing Shoot stays
        for key in ("ignoreTags", "enableECRAccess", "dualStack"):
            if key in existing:
                config[key] = existing[key]
        vpc = (existing.get("networks") or {}).get("vpc") or {}
        for key in ("id", "gatewayEndpoints"):
            if key in vpc:
                config["networks"]["vpc"][key] = vpc[key]
        allocations = {
            z.get("name"): z["elasticIPAllocationID"]
            for z in (existing.get("networks") or {}).get("zones") or []
            if z.get("elasticIPAllocationID")
        }
        for zone in config["networks"]["zones"]:
            if zone["name"] in allocations:
                zone["elasticIPAllocationID"] = allocations[zone["name"]]
    return config


def control_plane(zones: list[str], *, dual_stack: bool) -> Config:
    config = envelope(API_VERSION, "ControlPlaneConfig")
    if dual_stack:
        config["loadBalancerController"] = {"enabled": True}
    return config


def worker_config() -> Config:
    """IMDSv2 only (KIM's `provider.aws.enableIMDSv2`): tokens required, hop limit 2."""
    return envelope(
        API_VERSION,
        "WorkerConfig",
        instanceMetadataOptions={
            "httpTokens": "required",
            "httpPutResponseHopLimit": IMDS_HOP_LIMIT,
        },
    )


CONVERTER = ProviderConverter(API_VERSION, "aws", infrastructure, control_plane, True)
