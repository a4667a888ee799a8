"""Google Distributed Cloud Hosted (`gdch.provider.extensions.gardener.gdc.goog/v1alpha1`): the
nodes CIDR split evenly over 1-3 zones, the parent network from the converter configuration,
egress on. The cloud profile is configurable (`provider.gdch.cloudProfileName`, else `cat`)."""

from __future__ import annotations

import ipaddress

from reconciler.infra.converter.base import (
    Config,
    ConversionError,
    ProviderConverter,
    envelope,
    unique,
)
from reconciler.infra.converter.config import GdchConfig

API_VERSION = "gdch.provider.extensions.gardener.gdc.goog/v1alpha1"
CLOUD_PROFILE = "cat"
SHIFT = {1: 0, 2: 1, 3: 2}


def zones_of(nodes: str, zones: list[str]) -> list[Config]:
    if len(zones) not in SHIFT:
        raise ConversionError(f"{len(zones)} zones: GDCH supports 1 to 3")
    try:
        net = ipaddress.IPv4Network(nodes, strict=False)
    except ValueError:
        raise ConversionError(f"nodes CIDR {nodes!r} is not an IPv4 CIDR") from None
    prefix = net.prefixlen + SHIFT[len(zones)]
    if prefix > 32:
        raise ConversionError(f"nodes CIDR {nodes} is too small for {len(zones)} zones")
    size = 1 << (32 - prefix)
    base = int(net.network_address)
    return [
        {"name": zone, "CIDR": f"{ipaddress.IPv4Address(base + i * size)}/{prefix}"}
        for i, zone in enumerate(unique(zones))
    ]


def infrastructure_for(gdch: GdchConfig) -> ProviderConverter:
    def infrastructure(
        nodes: str, zones: list[str], *, dual_stack: bool, existing: Config | None
    ) -> Config:
        parent = {"name": gdch.parent_reference_name}
        if gdch.parent_reference_namespace:
            parent["namespace"] = gdch.parent_reference_namespace
        if gdch.parent_reference_type:
            parent["type"] = gdch.parent_reference_type
        return envelope(
            API_VERSION,
            "InfrastructureConfig",
            enableEgress=True,
            networks={
                "nodeCIDR": nodes,
                "zones": zones_of(nodes, zones),
                "parentReference": parent,
            },
        )

    def control_plane(zones: list[str], *, dual_stack: bool) -> Config:
        return envelope(API_VERSION, "ControlPlaneConfig")

    return ProviderConverter(
        API_VERSION, gdch.cloud_profile_name or CLOUD_PROFILE, infrastructure, control_plane
    )
