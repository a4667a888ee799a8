"""Azure (`azure.provider.extensions.gardener.cloud/v1alpha1`): a VNet of the nodes CIDR, zoned
when the workers name zones; each zone (`"1"`..`"8"`, numbers in the config) a consecutive
/(n+3) subnet with its own NAT gateway (idle timeout 4 min). No zones: the "lite" layout, which a
patch never changes."""

from __future__ import annotations

from reconciler.infra.converter.base import (
    Config,
    ConversionError,
    ProviderConverter,
    envelope,
    equally_split,
)

API_VERSION = "azure.provider.extensions.gardener.cloud/v1alpha1"
NAT_IDLE_MINUTES = 4


def _number(zone: str) -> int:
    try:
        number = int(zone)
    except ValueError:
        raise ConversionError(f"Azure zone {zone!r} is not a number 1-8") from None
    if not 1 <= number <= 8:
        raise ConversionError(f"Azure zone {zone!r} is not a number 1-8")
    return number


def infrastructure(
    nodes: str, zones: list[str], *, dual_stack: bool, existing: Config | None
) -> Config:
    numbers = [_number(zone) for zone in zones]
    subnets = equally_split(nodes, zones, most=8)
    networks: Config = {"vnet": {"cidr": nodes}}
    if subnets:
        networks["zones"] = [
            {
                "name": number,
                "cidr": cidr,
                "natGateway": {"enabled": True, "idleConnectionTimeoutMinutes": NAT_IDLE_MINUTES},
            }
            for number, (_, cidr) in zip(numbers, subnets, strict=True)
        ]
    config = envelope(API_VERSION, "InfrastructureConfig", networks=networks, zoned=bool(zones))
    if existing is not None:
        old = existing.get("networks") or {}
        by_name = {z.get("name"): z for z in old.get("zones") or []}
        for zone in networks.get("zones", []):
            for key in ("natGateway", "serviceEndpoints"):
                if key in by_name.get(zone["name"], {}):
                    zone[key] = by_name[zone["name"]][key]
        for key in ("vnet", "serviceEndpoints", "natGateway", "workers"):
            if key in old:
                networks[key] = old[key]
        if "resourceGroup" in existing:
            config["resourceGroup"] = existing["resourceGroup"]
    return config


def control_plane(zones: list[str], *, dual_stack: bool) -> Config:
    return envelope(API_VERSION, "ControlPlaneConfig")


def is_lite(existing_infrastructure: Config) -> bool:
    """An Azure Shoot created without zones: its network layout is never regenerated."""
    return not ((existing_infrastructure.get("networks") or {}).get("zones"))


CONVERTER = ProviderConverter(API_VERSION, "az", infrastructure, control_plane, True)
