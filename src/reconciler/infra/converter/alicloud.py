"""Alibaba Cloud (`alicloud.provider.extensions.gardener.cloud/v1alpha1`): a VPC of the nodes
CIDR, each zone a consecutive /(n+3) workers subnet."""

from __future__ import annotations

from reconciler.infra.converter.base import Config, ProviderConverter, envelope, equally_split

API_VERSION = "alicloud.provider.extensions.gardener.cloud/v1alpha1"


def infrastructure(
    nodes: str, zones: list[str], *, dual_stack: bool, existing: Config | None
) -> Config:
    subnets = equally_split(nodes, zones, most=8)
    return envelope(
        API_VERSION,
        "InfrastructureConfig",
        networks={
            "vpc": {"cidr": nodes},
            "zones": [{"name": zone, "workers": cidr} for zone, cidr in subnets],
        },
    )


def control_plane(zones: list[str], *, dual_stack: bool) -> Config:
    return envelope(API_VERSION, "ControlPlaneConfig")


CONVERTER = ProviderConverter(API_VERSION, "alicloud", infrastructure, control_plane)
